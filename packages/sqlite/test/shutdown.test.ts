import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRegistry, DEFAULT_LEASE_TIMING, type MemberEvent } from '@rollcall/core';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './support/sqlite.js';

const dir = tempDir();
const child = fileURLToPath(new URL('./support/child.mjs', import.meta.url));
const closeAfter: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closeAfter.splice(0).map((c) => c()));
});

describe('shutdownOnSignals across processes', () => {
  for (const [signal, exitCode] of [['SIGTERM', 143], ['SIGINT', 130]] as const) {
    it(`a leader ${signal}ed leaves at once: its member is deleted, not expired, and a successor leads well within a lease; it exits ${exitCode}`, async () => {
      const path = join(dir, `${signal}.db`);
      const proc = spawn(process.execPath, [child, 'serve', path], { stdio: ['ignore', 'pipe', 'pipe'] });
      closeAfter.push(async () => void (proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL')));
      let stderr = '';
      proc.stderr.on('data', (d: Buffer) => (stderr += d));
      // 'close': the process has exited and its output has been read.
      const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
      await new Promise<void>((resolve, reject) => {
        proc.stdout.on('data', (d: Buffer) => String(d).includes('"leading":true') && resolve());
        void exited.then(() => reject(new Error(`the child exited before it led: ${stderr}`)));
      });

      // Default timings: an election lease of 15 s, a member lease of 20 s.
      const registry = await createRegistry({ type: 'sqlite', cluster: 'mp-serve', identity: 'successor', sqlite: { path } });
      closeAfter.push(() => registry.close());
      const events: MemberEvent[] = [];
      let childRemoved!: () => void;
      const removed = new Promise<void>((resolve) => (childRemoved = resolve));
      registry.watchMembers('worker', (e) => {
        events.push(e);
        if (e.type === 'removed' && e.member.id === 'child') childRemoved();
      });
      const leadership = registry.campaign('scheduler');
      expect((await registry.members('worker')).map((m) => m.id)).toEqual(['child']);
      expect(leadership.isLeader).toBe(false);

      const sentAt = performance.now();
      proc.kill(signal);
      await Promise.all([removed, leadership.whenElected()]);
      const handoverMs = performance.now() - sentAt;

      expect(await exited).toBe(exitCode);
      expect(stderr).toBe('');
      expect(events.filter((e) => e.type === 'removed').map((e) => e.type === 'removed' && e.reason)).toEqual(['deleted']);
      // A lease's wait would take 15 s at least; a handover through the watch takes a poll or two.
      expect(handoverMs).toBeLessThan(DEFAULT_LEASE_TIMING.leaseDurationMs / 3);
    });
  }
});
