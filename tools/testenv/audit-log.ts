import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
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

/** A counting window: where the log ended, in which file, and the time when it was opened. */
export interface AuditWindow {
  fromByte: number;
  /** The log file's inode then: a rotation renames it, so it is found again by this. */
  inode: number;
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
   * @param markerWaitMs how long to wait for the marker to be logged, ms (default 30000)
   */
  constructor(
    private readonly path: string,
    private readonly marker: (name: string) => Promise<void>,
    private readonly markerWaitMs = MARKER_WAIT_MS,
  ) {}

  open(): AuditWindow {
    const { size, ino } = statSync(this.path);
    return { fromByte: size, inode: ino, from: Date.now() };
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
        events = this.eventsSince(window);
        return events.some((e) => e.objectRef?.name === markerName);
      },
      { what: `the audit log ${this.path} to show the marker request`, timeoutMs: this.markerWaitMs },
    );
    const seen = new Set<string>();
    return events.filter((e) => {
      const received = Date.parse(e.requestReceivedTimestamp ?? '');
      if (seen.has(e.auditID) || !(received >= window.from && received < to)) return false;
      seen.add(e.auditID);
      return true;
    });
  }

  /**
   * The events logged since the window opened. The API server rotates the log
   * by renaming it `<name>-<time><ext>` and starting a new one: the window's
   * file is then that backup, followed by any later backups and the new log.
   */
  private eventsSince(window: AuditWindow): AuditEvent[] {
    const current = statSync(this.path);
    if (current.ino === window.inode) {
      if (current.size < window.fromByte) throw new Error(`the audit log ${this.path} was truncated during the window; run again`);
      return parseLines(readFrom(this.path, window.fromByte));
    }
    const dir = dirname(this.path);
    const ext = extname(this.path);
    const stem = `${basename(this.path, ext)}-`;
    // the time in a backup's name sorts as text
    const backups = readdirSync(dir).filter((f) => f.startsWith(stem) && f.endsWith(ext)).sort().map((f) => join(dir, f));
    const first = backups.findIndex((f) => statSync(f).ino === window.inode);
    if (first < 0) throw new Error(`the audit log ${this.path} was rotated during the window and its backup is gone; run again`);
    const text = [readFrom(backups[first]!, window.fromByte), ...backups.slice(first + 1).map((f) => readFrom(f, 0)), readFrom(this.path, 0)];
    return text.flatMap(parseLines);
  }
}

/** A file's bytes from `fromByte` to its end now, as text. */
function readFrom(path: string, fromByte: number): string {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(Math.max(0, statSync(path).size - fromByte));
    readSync(fd, buffer, 0, buffer.length, fromByte);
    return buffer.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** The events of whole lines; the last line is dropped, empty after the last newline or still being written. */
function parseLines(text: string): AuditEvent[] {
  const lines = text.split('\n');
  lines.pop();
  return lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as AuditEvent);
}
