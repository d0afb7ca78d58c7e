import { CorruptRecordError } from '@rollcall/core';
import { BACKEND } from '@rollcall/kube-client';

/** A record whose object cannot be decoded: CORRUPT_RECORD, this backend's. */
export function corrupt(key: string, problem: string, cause?: unknown): CorruptRecordError {
  return new CorruptRecordError(key, `record ${key} cannot be decoded: ${problem}`, { backend: BACKEND, cause });
}
