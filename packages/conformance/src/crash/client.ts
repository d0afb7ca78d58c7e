import type { JsonValue } from '@rollcall/core';
import { supports } from '@rollcall/core/admin';
import type { RecordStore } from '@rollcall/core/spi';
import type { ConformanceConfig, ConformancePod, CrashChildTarget } from '../capabilities.js';
import { ChildHandle, packageFile } from '@rollcall/child-harness';
import { serveStore } from './ipc-store.js';
import type { CrashCommand, CrashEvent, CrashInit } from './protocol.js';

/** The compiled crash child, found from this package's root so it works from `src` (tests) and from `dist`. */
export function crashChildEntry(): string {
  return packageFile(import.meta.url, '@rollcall/conformance', 'dist/crash/child.js', 'npm run build -w @rollcall/conformance');
}

/**
 * A client in a child process, to be killed with SIGKILL: the suite's handle
 * on the crash child, over the child-process harness. Events the child
 * reports are kept, so a test can wait for one that already arrived.
 */
export class CrashClient {
  private constructor(
    private readonly child: ChildHandle<CrashCommand, CrashEvent>,
    /** The parent-side connection served to the child (`ipc-store`); its records stay behind when the child dies. */
    private readonly store: RecordStore | undefined,
  ) {}

  /** Starts the child (in `pod`, for the `pod` liveness mode) and waits until its registry is open. Rejects after `timeoutMs`. */
  static async start(target: CrashChildTarget, config: ConformanceConfig & { cluster: string }, timeoutMs: number, wallSkewMs = 0, pod?: ConformancePod): Promise<CrashClient> {
    // `advanced`: records cross the channel with what JSON would drop (undefined fields).
    const child = new ChildHandle<CrashCommand, CrashEvent>({ entry: crashChildEntry(), serialization: 'advanced', stdout: 'inherit', label: 'the crash child' });
    let init: CrashInit;
    let store: RecordStore | undefined;
    if (target.kind === 'config') {
      init = { kind: 'config', config: target.config(config, pod), wallSkewMs };
    } else {
      store = await target.openStore(config.cluster);
      const stopServing = serveStore(child.channel, store);
      const served = store;
      void child.exited.then(() => (stopServing(), served.close()));
      init = { kind: 'ipc-store', config: config as Record<string, unknown>, store: { backend: store.backend, maxPayloadBytes: store.maxPayloadBytes, syncedProgress: supports(store, 'syncedProgress'), orderedCreation: supports(store, 'orderedCreation') }, wallSkewMs };
    }
    child.init(init);
    try {
      await child.ready(timeoutMs);
    } catch (err) {
      await child.kill();
      throw err;
    }
    return new CrashClient(child, store);
  }

  /** Every event the child reported, with the parent's `performance.now()` at arrival. */
  get events(): readonly { event: CrashEvent; at: number }[] {
    return this.child.events;
  }

  /** The child's pid. */
  get pid(): number {
    return this.child.pid;
  }

  /** Sends a command; resolves with the child's answer. */
  command(command: CrashCommand, timeoutMs: number): Promise<JsonValue | undefined> {
    return this.child.request<JsonValue | undefined>(command, timeoutMs);
  }

  /** Resolves with the first reported event (past or future) that matches; rejects after `timeoutMs`. */
  event<T extends CrashEvent['type']>(type: T, timeoutMs: number, match: (e: Extract<CrashEvent, { type: T }>) => boolean = () => true): Promise<{ event: Extract<CrashEvent, { type: T }>; at: number }> {
    return this.child.event((e): e is Extract<CrashEvent, { type: T }> => e.type === type && match(e as Extract<CrashEvent, { type: T }>), timeoutMs, `a ${type} event`);
  }

  /** SIGKILLs the child and resolves once it is gone; returns the parent's `performance.now()` when the signal was sent. */
  kill(): Promise<number> {
    return this.child.kill();
  }
}
