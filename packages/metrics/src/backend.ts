import { ErrorCode, observeBackend, type BackendActivity, type Registry } from '@rollcall/core';
import type { Instruments } from './instruments.js';

/**
 * `rollcall_backend_requests_total`, `rollcall_backend_request_duration_seconds`,
 * `rollcall_watch_events_total`, `rollcall_watch_restarts_total` and
 * `rollcall_watch_relists_total`, from core's `observeBackend`. Calls
 * `onClosed` when the registry closes.
 */
export function trackBackend(registry: Registry, m: Instruments, onClosed: () => void): () => void {
  m.watchRelists.inc(0);
  return observeBackend(registry, (activity: BackendActivity) => {
    switch (activity.type) {
      case 'request': {
        const labels = { operation: activity.operation, code: activity.code ?? 'OK' };
        m.backendRequests.inc(labels);
        if (activity.operation !== 'watch') m.backendRequestDuration.observe(labels, activity.durationMs / 1000);
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
