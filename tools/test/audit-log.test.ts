import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../testenv/kube/audit-log.js';

let n = 0;
/** A request received `agoMs` ago; the windows below open 60 s ago, so that one logged now is inside it whatever the clock's resolution. */
const line = (verb: string, agoMs = 30_000, name = `lease-${n}`) =>
  `${JSON.stringify({ auditID: `id-${n++}`, verb, user: { username: 'u' }, requestReceivedTimestamp: new Date(Date.now() - agoMs).toISOString(), objectRef: { name } })}\n`;
const opened = (log: AuditLog) => ({ ...log.open(), from: Date.now() - 60_000 });

describe('AuditLog', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const setUp = () => {
    dir = mkdtempSync(join(tmpdir(), 'audit-log-'));
    const path = join(dir, 'audit.log');
    writeFileSync(path, line('get', 0)); // before the window's byte: not counted
    return { path, log: new AuditLog(path, async (name) => appendFileSync(path, line('get', 0, name))) };
  };

  it('counts the requests logged inside the window, by verb', async () => {
    const { path, log } = setUp();
    const window = opened(log);
    // received before the window opened (logged late): not counted either
    appendFileSync(path, line('patch') + line('patch') + line('update') + line('get', 90_000));
    expect(await log.close(window, ['u'])).toEqual(new Map([['u', { total: 3, byMethod: { patch: 2, update: 1 } }]]));
  });

  it('follows a rotation during the window: the rest of the renamed file, then the new log', async () => {
    const { path, log } = setUp();
    const window = opened(log);
    appendFileSync(path, line('patch'));
    // what the API server does at --audit-log-maxsize
    renameSync(path, join(dir, 'audit-2026-12-03T14-29-48.960.log'));
    writeFileSync(path, line('update'));
    appendFileSync(path, line('patch'));
    expect(await log.close(window, ['u'])).toEqual(new Map([['u', { total: 3, byMethod: { patch: 2, update: 1 } }]]));
  });

  it('reads a line still being written once it is whole', async () => {
    dir = mkdtempSync(join(tmpdir(), 'audit-log-'));
    const path = join(dir, 'audit.log');
    writeFileSync(path, '');
    const patch = line('patch');
    // the API server finishes the line and logs the marker after the first read has seen half of it
    const log = new AuditLog(path, async (name) => void setImmediate(() => appendFileSync(path, patch.slice(20) + line('get', 0, name))));
    const window = opened(log);
    appendFileSync(path, line('update') + patch.slice(0, 20));
    expect(await log.close(window, ['u'])).toEqual(new Map([['u', { total: 2, byMethod: { update: 1, patch: 1 } }]]));
  });

  it('says so at once when the window’s file is gone', async () => {
    const { path, log } = setUp();
    const window = opened(log);
    // moved out of the backups' names, not deleted, so that the new log cannot take its inode
    renameSync(path, join(dir, 'elsewhere.log'));
    writeFileSync(path, line('patch'));
    await expect(log.requests(window)).rejects.toThrow(/was rotated during the window and its backup is gone; run again/);
  });
});
