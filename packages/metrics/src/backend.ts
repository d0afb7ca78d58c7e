import { ErrorCode, observeBackend, type BackendActivity, type BackendOperation, type Registry } from '@rollcall/core';
import type { Counter, Histogram } from 'prom-client';
import type { Instruments } from './instruments.js';

/** The counter and histogram children of one operation and outcome, looked up once: every backend call passes here. */
interface RequestSeries {
  count: Counter.Internal;
  duration: Histogram.Internal<'operation' | 'code'> | undefined;
}

/**
 * `rollcall_backend_requests_total`, `rollcall_backend_request_duration_seconds`,
 * `rollcall_watch_events_total`, `rollcall_watch_restarts_total` and
 * `rollcall_watch_relists_total`, from core's `observeBackend`. Calls
 * `onClosed` when the registry closes.
 */
export function trackBackend(registry: Registry, m: Instruments, onClosed: () => void): () => void {
  m.watchRelists.inc(0);
  const series = new Map<string, RequestSeries>();
  const seriesOf = (operation: BackendOperation, code: string): RequestSeries => {
    const key = `${operation} ${code}`;
    let found = series.get(key);
    if (!found) {
      const labels = { operation, code };
      // A watch is a stream: counted when opened, not timed.
      series.set(key, (found = { count: m.backendRequests.labels(labels), duration: operation === 'watch' ? undefined : m.backendRequestDuration.labels(labels) }));
    }
    return found;
  };
  return observeBackend(registry, (activity: BackendActivity) => {
    switch (activity.type) {
      case 'request': {
        const { count, duration } = seriesOf(activity.operation, activity.code ?? 'OK');
        count.inc();
        duration?.observe(activity.durationMs / 1000);
        return;
      }
      case 'watchEvent':
        m.watchEvents.inc({ type: activity.event });
        return;
      case 'watchEnded':
        m.watchRestarts.inc({ code: activity.code });
        if (activity.code === ErrorCode.REVISION_TOO_OLD) m.watchRelists.inc();
        return;
      case 'closed':
        onClosed();
        return;
    }
  });
}
