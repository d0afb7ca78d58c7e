import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { StopWaiting, waitFor } from '@rollcall/conformance';
import { serverWait } from '../process/server-wait.js';

/** How long to wait for the marker request to reach the log. Milliseconds. */
const MARKER_WAIT_MS = 30_000;

/** One line of the audit log (an audit.k8s.io/v1 Event; one per stage of a request). */
export interface AuditEvent {
  auditID: string;
  verb: string;
  /** The request's path and query, selectors included. */
  requestURI?: string;
  user?: { username?: string };
  /** The client's User-Agent header. */
  userAgent?: string;
  requestReceivedTimestamp?: string;
  /** The answer (on the stage logged first: ResponseStarted for a long-running request such as a log read, else ResponseComplete). */
  responseStatus?: { code?: number };
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
   */
  constructor(
    private readonly path: string,
    private readonly marker: (name: string) => Promise<void>,
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
    const log = new LogReader(this.path, window.inode, window.fromByte);
    let events: AuditEvent[] = [];
    await waitFor(
      () => {
        const added = log.read().map((line) => JSON.parse(line) as AuditEvent);
        events = events.concat(added);
        return added.some((e) => e.objectRef?.name === markerName);
      },
      MARKER_WAIT_MS,
      serverWait({ what: `the audit log ${this.path} to show the marker request` }),
    );
    const seen = new Set<string>();
    return events.filter((e) => {
      const received = Date.parse(e.requestReceivedTimestamp ?? '');
      if (seen.has(e.auditID) || !(received >= window.from && received < to)) return false;
      seen.add(e.auditID);
      return true;
    });
  }

}

/**
 * Reads a log's whole lines from a position on, each byte once, across the API
 * server's rotations: it renames the log `<name>-<time><ext>` and starts a new
 * one, so the rest of a rotated file is found by its inode among the backups,
 * followed by any later backups and the new log.
 */
class LogReader {
  constructor(
    private readonly path: string,
    private inode: number,
    private byte: number,
  ) {}

  /** The lines completed since the last read (a line still being written waits for the next). */
  read(): string[] {
    let lines: string[] = [];
    const current = statSync(this.path);
    if (current.ino !== this.inode) {
      const dir = dirname(this.path);
      const ext = extname(this.path);
      const stem = `${basename(this.path, ext)}-`;
      // the time in a backup's name sorts as text
      const backups = readdirSync(dir).filter((f) => f.startsWith(stem) && f.endsWith(ext)).sort().map((f) => join(dir, f));
      const first = backups.findIndex((f) => statSync(f).ino === this.inode);
      if (first < 0) throw new StopWaiting(`the audit log ${this.path} was rotated during the window and its backup is gone; run again`);
      for (const backup of backups.slice(first)) {
        lines = lines.concat(this.take(backup));
        this.byte = 0;
      }
      this.inode = current.ino;
    } else if (current.size < this.byte) {
      throw new StopWaiting(`the audit log ${this.path} was truncated during the window; run again`);
    }
    return lines.concat(this.take(this.path)).filter((line) => line.startsWith('{'));
  }

  /** The whole lines of `file` from the position on, moving the position past them. */
  private take(file: string): string[] {
    const fd = openSync(file, 'r');
    try {
      const buffer = Buffer.alloc(Math.max(0, fstatSync(fd).size - this.byte));
      const read = readSync(fd, buffer, 0, buffer.length, this.byte);
      const end = buffer.subarray(0, read).lastIndexOf(0x0a) + 1;
      this.byte += end;
      return end === 0 ? [] : buffer.toString('utf8', 0, end - 1).split('\n');
    } finally {
      closeSync(fd);
    }
  }
}
