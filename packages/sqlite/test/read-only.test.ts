import { existsSync, readdirSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type Registry } from '@rollcall/core';
import { rawConnection, tempDir } from './support/sqlite.js';

const dir = tempDir();
const registries: Registry[] = [];
afterEach(async () => {
  await Promise.allSettled(registries.splice(0).map((r) => r.close()));
});

async function open(path: string, readOnly: boolean, identity = 'reader'): Promise<Registry> {
  const registry = await createRegistry({ type: 'sqlite', cluster: 'ro', identity, sqlite: { path, readOnly } });
  registries.push(registry);
  return registry;
}

function refusal(path: string): Promise<{ code: string; key?: string; message: string }> {
  return open(path, true).then(
    () => {
      throw new Error('opened, but an error was expected');
    },
    (e: { code: string; key?: string; message: string }) => e,
  );
}

/** The state row's revision: one more for every write anyone made. */
async function revision(path: string): Promise<number> {
  const raw = rawConnection(path);
  try {
    const [row] = await raw.exec('SELECT revision FROM rollcall_state WHERE id = 1');
    return Number(row!.revision);
  } finally {
    raw.close();
  }
}

describe('sqlite: registry.sqlite.readOnly', () => {
  it('a missing file is NOT_FOUND naming its absolute path, and nothing is created', async () => {
    const path = join(dir, 'missing', 'nowhere.db'); // not even its directory
    const e = await refusal(path);
    expect(e.code).toBe('NOT_FOUND');
    expect(e.message).toContain(path);
    expect(existsSync(join(dir, 'missing'))).toBe(false);

    mkdirSync(join(dir, 'empty-dir'));
    const inDir = join(dir, 'empty-dir', 'rollcall.db');
    expect((await refusal(inDir)).code).toBe('NOT_FOUND');
    expect(readdirSync(join(dir, 'empty-dir'))).toEqual([]);
  });

  it('a file without Rollcall\'s tables is NOT_FOUND naming the path, and stays as it was', async () => {
    const path = join(dir, 'zero.db');
    writeFileSync(path, '');
    const e = await refusal(path);
    expect(e.code).toBe('NOT_FOUND');
    expect(e.message).toContain(path);
    expect(e.message).toContain('rollcall_state');
    expect(statSync(path).size).toBe(0);
  });

  it('reads what the writers wrote, writes nothing itself (the revision stands), and a write is PERMISSION_DENIED', async () => {
    const path = join(dir, 'live.db');
    const writer = await open(path, false, 'writer');
    await writer.announce({ role: 'worker', id: 'w1', payload: { status: 'NORMAL' } });
    const token = await writer.campaign('scheduler').whenElected(AbortSignal.timeout(10_000));
    const before = await revision(path);

    const reader = await open(path, true);
    expect((await reader.members('worker')).map((m) => m.id)).toEqual(['w1']);
    expect((await reader.elections()).map((l) => [l.name, l.holder?.identity, l.fencingToken])).toEqual([['scheduler', 'writer', token]]);
    await expect(reader.announce({ role: 'worker', id: 'r1' })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', message: expect.stringContaining('read-only') });
    expect(await reader.tryLock('nightly').catch((e: { code: string }) => e.code)).toBe('PERMISSION_DENIED');
    await reader.close();
    // The writer renews meanwhile; stop it, then compare: every write in between would be the writer's own.
    await writer.close();
    const after = await revision(path);
    const raw = rawConnection(path);
    try {
      const changes = await raw.exec('SELECT record_key, record_value FROM rollcall_changes WHERE id > ? ORDER BY id', [before]);
      for (const c of changes) expect(String(c.record_value ?? ''), String(c.record_key)).not.toContain('reader');
      expect(after - before).toBe(changes.length);
    } finally {
      raw.close();
    }
  });

  it('opens a file whose writers have all closed (no -wal or -shm beside it)', async () => {
    const path = join(dir, 'quiet.db');
    const writer = await open(path, false, 'writer');
    const token = await writer.campaign('scheduler').whenElected(AbortSignal.timeout(10_000));
    await writer.close(); // resigns: the record stays, with no holder
    expect(existsSync(`${path}-wal`)).toBe(false);
    const reader = await open(path, true);
    expect((await reader.elections()).map((l) => [l.name, l.holder?.identity, l.fencingToken])).toEqual([['scheduler', undefined, token]]);
  });

  it(':memory: with readOnly is INVALID_CONFIG: there is nothing to read', async () => {
    expect(await refusal(':memory:')).toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.sqlite.readOnly' });
  });
});
