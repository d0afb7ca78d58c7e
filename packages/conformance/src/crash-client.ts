import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JsonValue } from '@rollcall/core';
import type { RecordStore } from '@rollcall/core/spi';
import type { ConformanceConfig, CrashChildTarget } from './capabilities.js';
import { isControl, type ChildCommand, type ChildEvent, type ChildInit, type ChildMessage } from './child/protocol.js';
import { serveStore, type IpcChannel } from './ipc-store.js';
import { WaitTimeoutError } from './wait-for.js';

/** The compiled child entry, found from this package's root so it works from `src` (tests) and from `dist`. */
export function crashChildEntry(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === '@rollcall/conformance') break;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('[rollcall] [conformance] cannot find the @rollcall/conformance package root');
    dir = parent;
  }
  const entry = join(dir, 'dist', 'child', 'crash-child.js');
  if (!existsSync(entry)) throw new Error(`[rollcall] [conformance] ${entry} is missing: build @rollcall/conformance first (npm run build -w @rollcall/conformance)`);
  return entry;
}

/**
 * A client in a child process, to be killed with SIGKILL: the parent's handle
 * on the crash child. Events the child reports are kept, so a test can wait for
 * one that already arrived.
 */
export class CrashClient {
  /** Every event the child reported, with the parent's `performance.now()` at arrival. */
  readonly events: { event: ChildEvent; at: number }[] = [];
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: JsonValue | undefined) => void; reject: (e: Error) => void }>();
  private readonly exited: Promise<void>;
  private stopServing: () => void = () => {};
  private store: RecordStore | undefined;
  private alive = true;

  private constructor(private readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    // After a SIGKILL, sends in flight fail with EPIPE; that is the crash, not a test failure.
    child.on('error', () => {});
    child.once('disconnect', () => this.stopServing());
    void this.exited.then(() => this.onExit());
    child.on('message', (raw: unknown) => {
      if (!isControl(raw)) return;
      const message = raw as ChildMessage;
      if (message.kind === 'event') this.events.push({ event: message.event, at: performance.now() });
      else if (message.kind === 'reply') {
        const pending = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.ok) pending?.resolve(message.value);
        else pending?.reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
      }
    });
  }

  /** Forks the child and waits until its registry is open. Rejects after `timeoutMs`. */
  static async start(target: CrashChildTarget, config: ConformanceConfig & { cluster: string }, timeoutMs: number, wallSkewMs = 0): Promise<CrashClient> {
    const child = fork(crashChildEntry(), [], {
      // Not the test runner's loader flags: the child is plain compiled JavaScript.
      execArgv: [],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const client = new CrashClient(child);
    let init: ChildInit;
    if (target.kind === 'config') {
      init = { kind: 'config', config: target.config(config) };
    } else {
      const store = await target.openStore(config.cluster);
      client.store = store;
      client.stopServing = serveStore(child as unknown as IpcChannel, store);
      init = { kind: 'ipc-store', config: config as Record<string, unknown>, store: { backend: store.backend, maxPayloadBytes: store.maxPayloadBytes } };
    }
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new WaitTimeoutError('the crash child to open its registry', timeoutMs)), timeoutMs);
      const onMessage = (raw: unknown) => {
        if (!isControl(raw)) return;
        const message = raw as ChildMessage;
        if (message.kind !== 'ready' && message.kind !== 'fatal') return;
        clearTimeout(timer);
        child.off('message', onMessage);
        if (message.kind === 'ready') resolve();
        else reject(Object.assign(new Error(`crash child failed to open its registry: ${message.error.message}`), { code: message.error.code }));
      };
      child.on('message', onMessage);
      child.once('exit', (code, signal) => reject(new Error(`crash child exited early (code ${code}, signal ${signal})`)));
    });
    child.send({ ch: 'ctl', kind: 'init', init: { ...init, wallSkewMs } });
    try {
      await ready;
    } catch (err) {
      await client.kill();
      throw err;
    }
    return client;
  }

  /** The child's pid. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sends a command; resolves with the child's answer. */
  command(command: ChildCommand, timeoutMs: number): Promise<JsonValue | undefined> {
    if (!this.alive) return Promise.reject(new Error('the crash child is gone'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new WaitTimeoutError(`the crash child to ${command.op}`, timeoutMs));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.child.send({ ch: 'ctl', kind: 'command', id, command }, (err) => err && this.pending.get(id)?.reject(err));
    });
  }

  /** Resolves with the first reported event (past or future) that matches; rejects after `timeoutMs`. */
  async event<T extends ChildEvent['type']>(type: T, timeoutMs: number, match: (e: Extract<ChildEvent, { type: T }>) => boolean = () => true): Promise<{ event: Extract<ChildEvent, { type: T }>; at: number }> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const found = this.events.find((e) => e.event.type === type && match(e.event as Extract<ChildEvent, { type: T }>));
      if (found) return found as { event: Extract<ChildEvent, { type: T }>; at: number };
      if (performance.now() > deadline) throw new WaitTimeoutError(`a ${type} event from the crash child`, timeoutMs);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** SIGKILLs the child and resolves once it is gone; returns the parent's `performance.now()` when the signal was sent. */
  async kill(): Promise<number> {
    const at = performance.now();
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
    return at;
  }

  private onExit(): void {
    this.alive = false;
    this.stopServing();
    for (const { reject } of this.pending.values()) reject(new Error('the crash child exited'));
    this.pending.clear();
    // The parent-side connection the child used; its records stay behind.
    void this.store?.close();
  }
}
