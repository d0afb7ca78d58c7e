import { createServer, type Server } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { assertPortsFree } from '../testenv/process/ports.js';
import { runStep } from '../testenv/process/run-step.js';
import { waitFor } from '@rollcall/conformance';
import { serverWait } from '../testenv/process/server-wait.js';
import { startUnits, type Unit } from '../testenv/process/unit.js';

// The environment's own error reporting: each failure says what failed and where to look.
describe('testenv failure messages', () => {
  let listener: Server | undefined;
  afterEach(() => {
    listener?.close();
    listener = undefined;
  });

  it('names a busy port and the process holding it', async () => {
    listener = createServer();
    const port = await new Promise<number>((resolve) => listener!.listen(0, '127.0.0.1', () => resolve((listener!.address() as { port: number }).port)));
    await expect(assertPortsFree('some-unit', [port], 200)).rejects.toThrow(new RegExp(`some-unit: port 127\\.0\\.0\\.1:${port} is busy, held by node \\(pid ${process.pid}\\)`));
  });

  it('names a failed step and its log file, with the log tail', async () => {
    const logFile = join(mkdtempSync(join(tmpdir(), 'testenv-')), 'step.log');
    await expect(
      runStep({ step: 'build something', command: 'sh', args: ['-c', 'echo compiler says no; exit 3'], logFile }),
    ).rejects.toThrow(new RegExp(`step "build something" failed with exit code 3; log: ${logFile}[\\s\\S]*compiler says no`));
  });

  it('prints the log tail of a server that does not become healthy in time', async () => {
    const logFile = join(mkdtempSync(join(tmpdir(), 'testenv-')), 'server.log');
    writeFileSync(logFile, 'line 1\nFATAL: cannot bind\n');
    await expect(waitFor(() => false, 300, serverWait({ what: 'my-server to become healthy', logFile }))).rejects.toThrow(
      /timed out after 300 ms waiting for my-server to become healthy[\s\S]*FATAL: cannot bind/,
    );
  });

  it('fails at once with the log tail when a server exits during start', async () => {
    // a root of its own: this unit's log and pid file must not land in the shared environment
    const savedRoot = process.env.ROLLCALL_TESTENV_ROOT;
    process.env.ROLLCALL_TESTENV_ROOT = mkdtempSync(join(tmpdir(), 'testenv-root-'));
    onTestFinished(() => {
      if (savedRoot === undefined) delete process.env.ROLLCALL_TESTENV_ROOT;
      else process.env.ROLLCALL_TESTENV_ROOT = savedRoot;
    });
    const unit: Unit = {
      name: `failing-unit-${process.pid}`,
      ports: [],
      startTimeoutMs: 30_000,
      prepare: async () => {},
      command: () => ({ command: '/bin/sh', args: ['-c', 'echo "config error on line 7" >&2; exit 1'] }),
      isHealthy: async () => false,
    };
    const started = Date.now();
    await expect(startUnits([unit])).rejects.toThrow(/exited before it became healthy[\s\S]*config error on line 7/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
