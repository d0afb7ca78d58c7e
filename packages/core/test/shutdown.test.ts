import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { shutdownOnSignals, type Closable, type ShutdownOptions } from '../src/index.js';

const child = fileURLToPath(new URL('./support/shutdown-child.mjs', import.meta.url));

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  result: Record<string, unknown> | undefined;
  stderr: string;
}

/** Starts the child (built core), sends the first signal once it is ready and a second (if given) once it is closing, resolves when it has exited. */
function signalChild(mode: 'registry' | 'hang', deadlineMs: number, signals: NodeJS.Signals[]): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [child, mode, String(deadlineMs)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let stderr = '';
    let sent = 0;
    proc.stdout.on('data', (d: Buffer) => {
      out += d;
      // One signal at a time: two sent at once may arrive as one.
      const lines = out.split('\n');
      if (lines.includes('ready') && sent === 0) proc.kill(signals[sent++]!);
      if (lines.includes('closing') && sent === 1 && signals.length > 1) proc.kill(signals[sent++]!);
    });
    proc.stderr.on('data', (d: Buffer) => (stderr += d));
    proc.on('error', reject);
    // 'close', not 'exit': the output may still be in the pipe when the process has exited.
    proc.on('close', (code, signal) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      resolve({ code, signal, result: line ? (JSON.parse(line) as Record<string, unknown>) : undefined, stderr });
    });
  });
}

describe('shutdownOnSignals', () => {
  it('SIGTERM closes the registry (its leadership ends with reason closed, calls are refused with CLOSED) and exits 143', async () => {
    const ended = await signalChild('registry', 10_000, ['SIGTERM']);
    expect(ended.stderr).toBe('');
    expect(ended).toMatchObject({ code: 143, signal: null, result: { signal: 'SIGTERM', exitCode: 143, outcome: 'closed', after: 'CLOSED', lost: ['closed'] } });
  });

  it('SIGINT exits 130', async () => {
    const ended = await signalChild('registry', 10_000, ['SIGINT']);
    expect(ended).toMatchObject({ code: 130, result: { signal: 'SIGINT', exitCode: 130, outcome: 'closed' } });
  });

  it('a close() that never ends is cut at the deadline, said by the logger, and the exit code stays the signal\'s', async () => {
    const ended = await signalChild('hang', 300, ['SIGTERM']);
    expect(ended).toMatchObject({ code: 143, result: { outcome: 'deadline' } });
    expect(ended.result!.elapsedMs).toBeGreaterThanOrEqual(290); // setTimeout may fire up to a millisecond early by performance.now()
    expect(ended.stderr).toMatch(/^error .*did not finish within 300 ms of SIGTERM/);
  });

  it('a second signal during the close exits at once, without waiting out the deadline', async () => {
    // The deadline is longer than this test's timeout: only the second signal can end the child in time.
    const ended = await signalChild('hang', 600_000, ['SIGINT', 'SIGINT']);
    expect(ended.code).toBe(130);
    expect(ended.result).toBeUndefined();
    expect(ended.stderr).toMatch(/second SIGINT during shutdown/);
  });

  it('refuses a bad deadline or signal list with INVALID_ARGUMENT and installs nothing', () => {
    const registry: Closable = { close: async () => {} };
    const before = process.listenerCount('SIGTERM');
    for (const options of <ShutdownOptions[]>[{ deadlineMs: 0 }, { deadlineMs: -1 }, { deadlineMs: 1.5 }, { deadlineMs: '10' as unknown as number }, { signals: [] as NodeJS.Signals[] }, { signals: ['SIGTERM', 'SIGNOPE' as NodeJS.Signals] }]) {
      expect(() => shutdownOnSignals(registry, options), JSON.stringify(options)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    expect(() => shutdownOnSignals({} as Closable)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });

  it('dispose() removes the handlers', () => {
    const before = process.listenerCount('SIGTERM');
    const handle = shutdownOnSignals({ close: async () => {} }, { exit: false });
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    handle.dispose();
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });
});
