import { describe, expect, it } from 'vitest';
import { RevisionJournal, versionOf, zxidOf } from '../src/revisions.js';

describe('revision journal (no server)', () => {
  it('a token names exactly the state handed out with it: the root plus the changes up to it', () => {
    const journal = new RevisionJournal();
    const root = journal.root('', new Map([['lock/a', '01']]), 5n);
    const one = journal.next(root.position, 'lock/b', '02', 6n);
    const two = journal.next(one.position, 'lock/a', null, 7n);
    expect([...journal.resolve(root.token)!.snapshot.versions]).toEqual([['lock/a', '01']]);
    expect([...journal.resolve(one.token)!.snapshot.versions]).toEqual([['lock/a', '01'], ['lock/b', '02']]);
    expect([...journal.resolve(two.token)!.snapshot.versions]).toEqual([['lock/b', '02']]);
    expect(two.token.startsWith('0000000000000007-')).toBe(true);
    // Resolving hands out a copy: changing it changes no revision.
    journal.resolve(one.token)!.snapshot.versions.clear();
    expect(journal.resolve(one.token)!.snapshot.versions.size).toBe(2);
  });

  it('long chains are stored whole again every maxDepth changes, with the same content', () => {
    const journal = new RevisionJournal(1000, 4);
    let { position, token } = journal.root('member/', new Map(), 1n);
    const expected = new Map<string, string>();
    for (let i = 0; i < 25; i++) {
      const key = `member/r/${i % 7}`;
      const version = i.toString(16).padStart(2, '0');
      if (i % 5 === 4) expected.delete(key);
      else expected.set(key, version);
      ({ position, token } = journal.next(position, key, i % 5 === 4 ? null : version, BigInt(i + 2)));
      expect(position.depth).toBeLessThanOrEqual(4);
      expect(new Map(journal.resolve(token)!.snapshot.versions)).toEqual(expected);
    }
    expect(journal.resolve(token)!.snapshot.prefix).toBe('member/');
  });

  it('forgets the oldest revisions beyond its capacity, and never knows foreign tokens', () => {
    const journal = new RevisionJournal(3);
    const tokens = Array.from({ length: 5 }, (_, i) => journal.root('', new Map(), BigInt(i)).token);
    expect(tokens.map((t) => journal.resolve(t) !== undefined)).toEqual([false, false, true, true, true]);
    expect(new Set(tokens).size).toBe(5);
    expect(journal.resolve(new RevisionJournal().root('', new Map(), 1n).token)).toBeUndefined();
  });

  it('versions are fixed-width hex of the mzxid, so a delete and re-create never repeats one', () => {
    const zxid = Buffer.alloc(8);
    zxid.writeBigUInt64BE(0x100000002an);
    expect(versionOf(zxid)).toBe('000000100000002a');
    expect(zxidOf(zxid)).toBe(0x100000002an);
    expect(zxidOf(undefined)).toBe(0n);
  });
});
