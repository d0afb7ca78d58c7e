import { BackendActivityReporter } from './backend-activity.js';
import type { Clock } from './clock.js';
import type { RegistryConfig } from './config/registry-config.js';
import { ConnectionMonitor } from './connection-monitor.js';
import type { Logger } from './logger.js';
import { MonitoredStore } from './monitored-store.js';
import type { CorruptEntry, RecordStore } from './store.js';
import { WatchCache } from './watch-cache.js';

/** A key no record has: reading it proves the backend answers. */
const CONNECTION_PROBE_KEY = 'probe/connection';

/**
 * What a registry runs on: the backend's own store, the monitored store every
 * algorithm writes through, the shared watch cache and the connection
 * monitor. Opened once the backend answers; closed last.
 * @internal
 */
export class RegistryConnection {
  private constructor(
    /** The backend's own store, as its plugin made it. */
    readonly raw: RecordStore,
    readonly store: MonitoredStore,
    readonly cache: WatchCache,
    readonly monitor: ConnectionMonitor,
  ) {}

  /** Resolves once the backend answered a first read; rejects (and closes `raw`) if it does not. */
  static async open(raw: RecordStore, resolved: RegistryConfig, clock: Clock, logger: Logger, onCorrupt: (entry: CorruptEntry) => void): Promise<RegistryConnection> {
    let monitored: MonitoredStore;
    const monitor: ConnectionMonitor = new ConnectionMonitor({
      clock,
      logger,
      backend: raw.backend,
      lostAfterMs: Math.max(resolved.election.leaseDurationMs, resolved.lock.leaseDurationMs, resolved.member.leaseDurationMs),
      probeIntervalMs: Math.min(resolved.election.retryPeriodMs, resolved.lock.retryPeriodMs),
      probe: (): Promise<unknown> => monitored.get(CONNECTION_PROBE_KEY),
    });
    monitored = new MonitoredStore(raw, clock, resolved.requestTimeoutMs, monitor, new BackendActivityReporter(logger));
    const cache = new WatchCache({
      store: monitored,
      clock,
      logger,
      retryDelayMs: 100,
      maxRetryDelayMs: Math.min(resolved.election.retryPeriodMs, resolved.lock.retryPeriodMs),
      trustWatchAfterMs: 2 * resolved.requestTimeoutMs,
      onCorrupt,
    });
    const connection = new RegistryConnection(raw, monitored, cache, monitor);
    try {
      // Nothing is watched until something is read; one call proves the backend answers.
      await monitored.get(CONNECTION_PROBE_KEY);
    } catch (err) {
      await connection.abandon();
      throw err;
    }
    return connection;
  }

  /** Undoes an open that cannot complete: nothing stays open. */
  async abandon(): Promise<void> {
    this.cache.close();
    this.monitor.close();
    await this.raw.close().catch(() => {});
  }

  /** Closes the cache, the monitor and the backend's store. */
  async close(): Promise<void> {
    this.cache.close();
    this.monitor.close();
    try {
      await this.raw.close();
    } finally {
      this.store.activity.close();
    }
  }
}
