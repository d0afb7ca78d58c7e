import type { CorruptRecordError } from '@rollcall/core';
import { recordFromJson, recordToJson, type LeaseRecord } from '@rollcall/core/spi';

const BACKEND = 'etcd';

/**
 * A record's value in etcd: core's JSON form of the record, so
 * `etcdctl get --prefix /rollcall/<cluster>/` shows it as is.
 */
export function encodeRecord(record: LeaseRecord): Buffer {
  return Buffer.from(recordToJson(record), 'utf8');
}

/** Decodes a stored value; a value that is not a record (edited by hand, another program's key) is a CorruptRecordError. */
export function decodeRecord(key: string, value: Buffer): LeaseRecord | CorruptRecordError {
  return recordFromJson(key, value, BACKEND);
}
