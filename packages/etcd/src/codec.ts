import type { CorruptRecordError } from '@rollcall/core';
import { type LeaseRecord, recordFromJson, type RecordKey, recordToJson } from '@rollcall/core/spi';
import { BACKEND } from './errors.js';

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

/** The first key after every key that starts with `prefix`: a range's `range_end` for a prefix. */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/** Record keys as etcd keys: `<prefix>/<cluster>/<record key>`. */
export class KeySpace {
  /** `<prefix>/<cluster>/`: the etcd key prefix of one cluster's records. */
  readonly keyPrefix: string;
  private readonly base: Buffer;

  constructor(prefix: string, cluster: string) {
    this.keyPrefix = `${prefix}/${cluster}/`;
    this.base = Buffer.from(this.keyPrefix, 'utf8');
  }

  /** The etcd key of a record key (or of a key prefix). */
  etcdKey(key: RecordKey): Buffer {
    return Buffer.concat([this.base, Buffer.from(key, 'utf8')]);
  }

  /** The record key of an etcd key under this cluster's prefix. */
  recordKey(etcdKey: Buffer): RecordKey {
    return etcdKey.subarray(this.base.length).toString('utf8');
  }
}
