import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { waitFor } from './wait-for.js';

/** How long to wait for the marker request to reach the log. Milliseconds. */
const MARKER_WAIT_MS = 30_000;

/** One line of the audit log (an audit.k8s.io/v1 Event; one per stage of a request). */
export interface AuditEvent {
  auditID: string;
  verb: string;
  /** The request's path and query, selectors included. */
  requestURI?: string;
  user?: { username?: string };
  requestReceivedTimestamp?: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
}

/** Requests of one user in a window: in all, and by verb. */
export interface AuditTotals {
  total: number;
  byMethod: Record<string, number>;
}

/** A counting window: where the log ended and the time when it was opened. */
export interface AuditWindow {
  fromByte: number;
  from: number;
}

/**
 * Requests per user from the API server's audit log: every request received
 * inside a window, counted once however many stages it logged, by verb. The
 * API server tells clients apart by their credentials, so each counted role
 * runs as its own service account.
 */
export class AuditLog {
  /**
   * @param path the audit log file
   * @param marker makes one request naming the given (absent) object, after
   *   the window: once its event is in the log, so is every earlier one
   */
  constructor(
    private readonly path: string,
    private readonly marker: (name: string) => Promise<void>,
  ) {}

  open(): AuditWindow {
    return { fromByte: statSync(this.path).size, from: Date.now() };
  }

  /** Ends the window now; resolves with each of `users`' requests received inside it. */
  async close(window: AuditWindow, users: readonly string[]): Promise<Map<string, AuditTotals>> {
    const counts = new Map(users.map((u) => [u, { total: 0, byMethod: {} as Record<string, number> }]));
    for (const e of await this.requests(window)) {
      const tally = counts.get(e.user?.username ?? '');
      if (!tally) continue;
      tally.total++;
      tally.byMethod[e.verb] = (tally.byMethod[e.verb] ?? 0) + 1;
    }
    return counts;
  }

  /** Ends the window now; resolves with the requests received inside it that `include` picks, by verb. */
  async closeWhere(window: AuditWindow, include: (event: AuditEvent) => boolean): Promise<AuditTotals> {
    const totals: AuditTotals = { total: 0, byMethod: {} };
    for (const e of await this.requests(window)) {
      if (!include(e)) continue;
      totals.total++;
      totals.byMethod[e.verb] = (totals.byMethod[e.verb] ?? 0) + 1;
    }
    return totals;
  }

  /** Ends the window now; resolves with every request received inside it, each once (its first logged stage). */
  async requests(window: AuditWindow): Promise<AuditEvent[]> {
    const to = Date.now();
    const markerName = `bench-marker-${to.toString(36)}`;
    await this.marker(markerName);
    let events: AuditEvent[] = [];
    await waitFor(
      () => {
        events = this.eventsSince(window.fromByte);
        return events.some((e) => e.objectRef?.name === markerName);
      },
      { what: `the audit log ${this.path} to show the marker request`, timeoutMs: MARKER_WAIT_MS },
    );
    const seen = new Set<string>();
    return events.filter((e) => {
      const received = Date.parse(e.requestReceivedTimestamp ?? '');
      if (seen.has(e.auditID) || !(received >= window.from && received < to)) return false;
      seen.add(e.auditID);
      return true;
    });
  }

  private eventsSince(fromByte: number): AuditEvent[] {
    const size = statSync(this.path).size;
    if (size < fromByte) throw new Error(`the audit log ${this.path} was rotated during the window; run again`);
    const buffer = Buffer.alloc(size - fromByte);
    const fd = openSync(this.path, 'r');
    try {
      readSync(fd, buffer, 0, buffer.length, fromByte);
    } finally {
      closeSync(fd);
    }
    const lines = buffer.toString('utf8').split('\n');
    lines.pop(); // empty after the last newline, or a line still being written
    return lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as AuditEvent);
  }
}
