import { createServer } from 'node:net';
import { execFileSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { basename } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { TestenvError } from '../env/errors.js';

/**
 * A port of this instance: every port is an offset from one base (ROLLCALL_TESTENV_PORT_BASE,
 * default 21000), so a second environment moves all of them at once. Each backend declares
 * its offsets in its descriptor (`servers/<name>.ts`); the catalog checks that none overlap.
 */
export function portAt(offset: number, index = 0): number {
  const base = Number(process.env.ROLLCALL_TESTENV_PORT_BASE ?? 21000);
  return base + offset + index;
}

/** A port lookup over one backend's named offsets: `const port = portsOf({ client: 379 }); port('client')`. */
export function portsOf<T extends Record<string, number>>(offsets: T): (name: keyof T, index?: number) => number {
  return (name, index = 0) => portAt(offsets[name]!, index);
}

/** True when nothing listens on 127.0.0.1:port (we can bind it ourselves). */
export function isPortFree(portNumber: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port: portNumber, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/** The program a process runs, by its executable: ss names a thread (Node 24 calls its main thread "MainThread"). */
function executableOf(pid: string): string | undefined {
  try {
    return basename(readlinkSync(`/proc/${pid}/exe`));
  } catch {
    return undefined;
  }
}

/** Describes the process that listens on a TCP port, from `ss`, e.g. `java (pid 6594)`. */
export function portHolder(portNumber: number): string {
  try {
    const out = execFileSync('ss', ['-ltnpH', `sport = :${portNumber}`], { encoding: 'utf8' });
    const holders = [...out.matchAll(/\("([^"]+)",pid=(\d+)/g)].map((m) => `${executableOf(m[2]!) ?? m[1]} (pid ${m[2]})`);
    if (holders.length > 0) return [...new Set(holders)].join(', ');
    return out.trim() ? 'a process this user cannot see' : 'an unknown process';
  } catch {
    return 'an unknown process (ss failed)';
  }
}

/**
 * Waits (bounded) until the ports are free. A multi-threaded server killed a moment ago
 * can still hold its sockets while its last threads exit, though its pid already shows
 * as a zombie.
 */
export async function waitForPortsFree(ports: readonly number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const busy: number[] = [];
    for (const p of ports) if (!(await isPortFree(p))) busy.push(p);
    if (busy.length === 0 || Date.now() >= deadline) return busy;
    await delay(50);
  }
}

/** Throws an error naming the port and the process holding it when a port stays busy. */
export async function assertPortsFree(unit: string, ports: readonly number[], timeoutMs = 5_000): Promise<void> {
  const busy = await waitForPortsFree(ports, timeoutMs);
  if (busy.length > 0) {
    const p = busy[0]!;
    throw new TestenvError(`${unit}: port 127.0.0.1:${p} is busy, held by ${portHolder(p)}`);
  }
}
