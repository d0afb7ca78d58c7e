import type { RecordStore } from '@rollcall/core/spi';
import { afterEach, beforeEach } from 'vitest';
import type { StoreCapabilities } from '../capabilities.js';
import { uniqueCluster } from '../names.js';

/** What `storeConformance` needs from a backend. */
export interface StoreConformanceOptions {
  /** The backend's name, shown in every title: `memory`, `etcd`, ... */
  name: string;
  /**
   * Opens a new, connected store (a new client) for `cluster`. Called at least
   * once per case with a fresh cluster name; the suite closes every store it opened.
   */
  openStore(cluster: string): Promise<RecordStore>;
  /** The suite's hooks into the backend (compaction, partitions); cases needing a missing one are skipped, with the reason in the title. What the store itself can do, it declares in its `supports` manifest. */
  capabilities?: StoreCapabilities;
  /** Bound on a watch event reaching the watcher, and on the watch ending with an error. Milliseconds. Default 5000. */
  eventTimeoutMs?: number;
}

/** Per-case resources of the store suite: a fresh cluster and its store, and every store opened, closed after each case. */
export interface StoreHarness {
  readonly name: string;
  readonly capabilities: StoreCapabilities;
  /** Bound on a watch event reaching the watcher, and on the watch ending with an error. Milliseconds. */
  readonly eventTimeoutMs: number;
  /** This case's store, on this case's fresh cluster. */
  store(): RecordStore;
  /** Opens another store for `cluster`; closed after the case. */
  open(cluster: string): Promise<RecordStore>;
  /** Stores a case cut off with `capabilities.partition`: healed after the case, unless the case took them out again. */
  readonly partitioned: Set<RecordStore>;
}

/** The harness, with its before-each open and after-each heal and close registered in the calling describe scope. */
export function createStoreHarness(options: StoreConformanceOptions): StoreHarness {
  const capabilities = options.capabilities ?? {};
  const opened: RecordStore[] = [];
  const partitioned = new Set<RecordStore>();
  let store: RecordStore;

  const open = async (forCluster: string): Promise<RecordStore> => {
    const s = await options.openStore(forCluster);
    opened.push(s);
    return s;
  };

  beforeEach(async () => {
    store = await open(uniqueCluster('store'));
  });

  afterEach(async () => {
    for (const s of partitioned) await capabilities.heal?.(s);
    partitioned.clear();
    await Promise.allSettled(opened.splice(0).map((s) => s.close()));
  });

  return { name: options.name, capabilities, eventTimeoutMs: options.eventTimeoutMs ?? 5000, store: () => store, open, partitioned };
}

export function codeOf(err: unknown): string | undefined {
  return (err as { code?: string })?.code;
}
