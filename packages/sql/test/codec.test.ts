import { describe, expect, it } from 'vitest';
import { createdOf, decodeRecord, encodeRecord, legacyCreated } from '../src/codec.js';
import { schemaScript, tableNames, tablePrefixProblem } from '../src/schema.js';

const record = { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: '2026-01-02T03:04:05.678000Z', renewTime: null, leaseTransitions: 3, payload: { cpu: 0.5, tags: ['ü'] } };

describe('codec', () => {
  it('round-trips a record with every field and the payload', () => {
    const decoded = decodeRecord('sqlite', 'member/w/a', '7', encodeRecord(record), '5');
    expect(decoded).toEqual({ ok: true, stored: { key: 'member/w/a', version: '7', record, created: '5' } });
  });

  it('keeps the fields in a fixed order and leaves an absent payload out', () => {
    const { payload: _payload, ...bare } = record;
    expect(encodeRecord({ ...bare, leaseTransitions: 0 })).toBe(
      '{"holderIdentity":"a","leaseDurationSeconds":15,"acquireTime":"2026-01-02T03:04:05.678000Z","renewTime":null,"leaseTransitions":0}',
    );
  });

  it.each([
    ['not JSON', 'nope', 'not UTF-8 JSON'],
    ['NULL', null, 'NULL'],
    ['a number', 42, 'number'],
    ['a JSON array', '[]', 'holderIdentity'],
    ['a wrong field type', '{"holderIdentity":"a","leaseDurationSeconds":"x","leaseTransitions":0}', 'leaseDurationSeconds'],
  ])('a value that is %s is a corrupt entry with its key and version, never a throw', (_what, value, reason) => {
    const decoded = decodeRecord('mysql', 'lock/x', '9', value, '4');
    expect(!decoded.ok && decoded.corrupt.created).toBe('4');
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.corrupt.key).toBe('lock/x');
    expect(decoded.corrupt.version).toBe('9');
    expect(decoded.corrupt.error.code).toBe('CORRUPT_RECORD');
    expect(decoded.corrupt.error.message).toMatch(/^\[rollcall\] \[mysql\] lock\/x \(version 9\)/);
    expect(decoded.corrupt.error.message).toContain(reason);
  });

  it('bytes that are not UTF-8 are a corrupt entry', () => {
    const decoded = decodeRecord('mysql', 'lock/x', '2', Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), '2');
    expect(decoded.ok).toBe(false);
  });

  it('a row of an earlier release (no created_revision) reads as created at its acquireTime, which its heartbeats keep', () => {
    const decoded = decodeRecord('sqlite', 'member/w/a', '7', encodeRecord(record), createdOf({ created_revision: null }));
    expect(decoded).toEqual({ ok: true, stored: { key: 'member/w/a', version: '7', record, created: 'legacy:2026-01-02T03:04:05.678000Z' } });
    const beat = decodeRecord('sqlite', 'member/w/a', '9', encodeRecord({ ...record, renewTime: '2026-01-02T03:04:07.000000Z' }), createdOf({}));
    expect(beat.ok && beat.stored.created).toBe('legacy:2026-01-02T03:04:05.678000Z');
    // No acquireTime (a free lease), or one no key segment could hold: created at its version, as before.
    expect(legacyCreated({ ...record, acquireTime: null }, '9')).toBe('9');
    expect(legacyCreated({ ...record, acquireTime: '2026/01/02' }, '9')).toBe('9');
    const corrupt = decodeRecord('sqlite', 'member/w/a', '7', 'nope', null);
    expect(!corrupt.ok && 'created' in corrupt.corrupt).toBe(false);
    expect(createdOf({ created_revision: 12n })).toBe('12');
  });

  it('decodes a value handed back as bytes', () => {
    expect(decodeRecord('mysql', 'lock/x', '1', Buffer.from(encodeRecord(record)), '1').ok).toBe(true);
  });
});

describe('table prefix', () => {
  it.each(['rollcall_', 'app1_rc_', 'R'])('accepts %s', (prefix) => {
    expect(tablePrefixProblem(prefix)).toBeUndefined();
    expect(tableNames(prefix).records).toBe(`${prefix}records`);
  });

  it.each(['', '1abc_', '_x', 'a-b', 'a b', 'a;drop', 'x'.repeat(41), 'ü_'])('refuses %j with INVALID_CONFIG', (prefix) => {
    expect(tablePrefixProblem(prefix)).toBeDefined();
    expect(() => tableNames(prefix)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
  });
});

describe('schema script', () => {
  it('has the DDL in order and the state row of this schema version', () => {
    const script = schemaScript(['CREATE TABLE a (x INT)', 'CREATE TABLE b (y INT)'], tableNames('rc_'), '@rollcall/x 1.0.0');
    expect(script.indexOf('CREATE TABLE a')).toBeLessThan(script.indexOf('CREATE TABLE b'));
    expect(script).toContain("INSERT INTO rc_state (id, schema_version, revision, purged_through, created_by) VALUES (1, 1, 0, 0, '@rollcall/x 1.0.0');");
  });
});
