import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../src/index.js';
import { MAX_LEASE_DURATION_SECONDS, parseCreatedAs } from '../src/lease-record.js';
import { recordFromJson, recordToJson, type LeaseRecord } from '../src/spi.js';

const record: LeaseRecord = { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: '2026-01-01T00:00:00.000000Z', renewTime: null, leaseTransitions: 3, payload: { cpu: 1 } };

describe('record JSON', () => {
  it('round-trips every field and the payload, from text and from bytes', () => {
    expect(recordFromJson('k', recordToJson(record), 'x')).toEqual(record);
    expect(recordFromJson('k', Buffer.from(recordToJson(record)), 'x')).toEqual(record);
    const { payload: _payload, ...bare } = record;
    expect(recordFromJson('k', recordToJson(bare), 'x')).toEqual(bare);
  });

  it('round-trips a member record\'s liveness; a liveness this version does not know reads as absent (the reader\'s mode)', () => {
    const inPod: LeaseRecord = { ...record, liveness: { mode: 'pod', podUid: 'f0e1' } };
    expect(recordFromJson('k', recordToJson(inPod), 'x')).toEqual(inPod);
    const unknown = JSON.stringify({ ...record, liveness: { mode: 'carrier-pigeon' } });
    expect(recordFromJson('k', unknown, 'x')).toEqual(record);
    const noUid = JSON.stringify({ ...record, liveness: { mode: 'pod' } });
    expect(recordFromJson('k', noUid, 'x')).toEqual(record);
  });

  it('reports garbage as CORRUPT_RECORD naming the key, never throwing', () => {
    for (const garbage of ['{not json', '[]', '{"holderIdentity":1}', Buffer.from([0xff, 0xfe])]) {
      const result = recordFromJson('election/x', garbage, 'etcd');
      expect(result).toMatchObject({ code: ErrorCode.CORRUPT_RECORD, key: 'election/x' });
      expect((result as Error).message).toMatch(/^\[rollcall\] \[etcd\] election\/x/);
    }
  });

  it('a fencing token past 2^53 - 1 is corrupt: it could no longer grow by one', () => {
    expect(recordFromJson('k', recordToJson({ ...record, leaseTransitions: Number.MAX_SAFE_INTEGER }), 'x')).toMatchObject({ leaseTransitions: Number.MAX_SAFE_INTEGER });
    for (const huge of [2 ** 53, 1e300]) {
      const result = recordFromJson('lock/x', JSON.stringify({ ...record, leaseTransitions: huge }), 'etcd');
      expect(result).toMatchObject({ code: ErrorCode.CORRUPT_RECORD, key: 'lock/x' });
      expect((result as Error).message).toContain('leaseTransitions is not a non-negative integer up to 2^53 - 1');
    }
  });

  it('a lease above the one-hour ceiling is corrupt, whoever wrote it; the ceiling itself is a record', () => {
    expect(MAX_LEASE_DURATION_SECONDS).toBe(3600);
    expect(recordFromJson('k', recordToJson({ ...record, leaseDurationSeconds: 3600 }), 'x')).toMatchObject({ leaseDurationSeconds: 3600 });
    for (const huge of [3601, 2 ** 31, Number.MAX_SAFE_INTEGER]) {
      const result = recordFromJson('member/w/x', JSON.stringify({ ...record, leaseDurationSeconds: huge }), 'etcd');
      expect(result).toMatchObject({ code: ErrorCode.CORRUPT_RECORD, key: 'member/w/x' });
      expect((result as Error).message).toContain(`leaseDurationSeconds ${huge} is above the ceiling of 3600 (one hour)`);
    }
  });
});


describe('createdAs, one rule for every store', () => {
  it('keeps from:/to: with printable ASCII up to 200 characters, and nothing else', () => {
    expect(parseCreatedAs('from:42')).toBe('from:42');
    expect(parseCreatedAs(`to:${'x'.repeat(200)}`)).toBe(`to:${'x'.repeat(200)}`);
    for (const bad of [`to:${'x'.repeat(201)}`, 'from:', 'from:a b', 'from:\u001b[2J', 'via:1', 'from:é', 42, null, undefined]) expect(parseCreatedAs(bad), String(bad)).toBeUndefined();
  });

  it('a record whose createdAs breaks the rule is read without it', () => {
    const stored = JSON.parse(recordToJson({ holderIdentity: 'a', leaseDurationSeconds: 10, leaseTransitions: 0, acquireTime: null, renewTime: null, createdAs: 'from:7' })) as Record<string, unknown>;
    const read = (value: unknown) => recordFromJson('member/w/1', JSON.stringify(value), 'test') as LeaseRecord;
    expect(read(stored).createdAs).toBe('from:7');
    expect(read({ ...stored, createdAs: 'from:\u0007' }).createdAs).toBeUndefined();
  });
});

describe('withdrawn, the withdraw mark', () => {
  it('is kept when true, and any other stored value reads as no mark', () => {
    const stored = JSON.parse(recordToJson({ holderIdentity: 'w1', leaseDurationSeconds: 10, leaseTransitions: 0, acquireTime: null, renewTime: null, withdrawn: true })) as Record<string, unknown>;
    const read = (value: unknown) => recordFromJson('member/w/w1', JSON.stringify(value), 'test') as LeaseRecord;
    expect(stored.withdrawn).toBe(true);
    expect(read(stored).withdrawn).toBe(true);
    for (const bad of ['true', 1, false, null, {}]) expect(read({ ...stored, withdrawn: bad }).withdrawn, JSON.stringify(bad)).toBeUndefined();
    const { withdrawn: _mark, ...unmarked } = read(stored);
    expect(JSON.parse(recordToJson(unmarked))).not.toHaveProperty('withdrawn');
  });
});
