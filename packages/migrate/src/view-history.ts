import type { RecordKey, WatchEvent } from '@rollcall/core/spi';
import type { MergedValue, Side, SideValue } from './merge.js';

/** Both sides' records and revisions at one point of a migrating view, and what the view had emitted by then. */
export interface ViewState {
  from: Map<RecordKey, SideValue>;
  to: Map<RecordKey, SideValue>;
  fromRevision: string;
  toRevision: string;
  emitted: Map<RecordKey, MergedValue>;
}

/** One step of a view: a side's watch event, or a merged change handed to the listener. */
export type ViewStep = { kind: 'side'; side: Side; event: WatchEvent } | { kind: 'emit'; key: RecordKey; value: MergedValue | undefined };

export function applyStep(state: ViewState, step: ViewStep): void {
  if (step.kind === 'emit') {
    if (step.value) state.emitted.set(step.key, step.value);
    else state.emitted.delete(step.key);
    return;
  }
  const { side, event } = step;
  const records = state[side];
  if (event.type === 'put') records.set(event.record.key, event.record);
  else if (event.type === 'corrupt') records.set(event.entry.key, event.entry);
  else if (event.type === 'delete') records.delete(event.key);
  if (side === 'from') state.fromRevision = event.revision;
  else state.toRevision = event.revision;
}

export function copyState(state: ViewState, prefix = ''): ViewState {
  const pick = <V>(map: Map<RecordKey, V>) => new Map([...map].filter(([key]) => key.startsWith(prefix)));
  return { from: pick(state.from), to: pick(state.to), fromRevision: state.fromRevision, toRevision: state.toRevision, emitted: pick(state.emitted) };
}

/** One line of history, from a list or a watch: a base state and the steps after it. */
class HistoryLine {
  private readonly steps: ViewStep[] = [];
  private baseIndex = 0;

  constructor(
    readonly id: number,
    readonly prefix: string,
    private readonly base: ViewState,
    private readonly limit: number,
  ) {}

  get length(): number {
    return this.baseIndex + this.steps.length;
  }

  /** Records a step; returns the revision of the state after it. The oldest steps fold into the base. */
  append(step: ViewStep): string {
    this.steps.push(step);
    if (this.steps.length > this.limit) {
      applyStep(this.base, this.steps.shift()!);
      this.baseIndex++;
    }
    return `${this.id}.${this.length}`;
  }

  /** What the line emitted after `index`, in order. */
  emittedAfter(index: number): { key: RecordKey; value: MergedValue | undefined }[] {
    return this.steps.slice(Math.max(0, index - this.baseIndex)).flatMap((step) => (step.kind === 'emit' ? [{ key: step.key, value: step.value }] : []));
  }

  stateAt(index: number): ViewState | undefined {
    if (index < this.baseIndex || index > this.length) return undefined;
    const state = copyState(this.base);
    for (const step of this.steps.slice(0, index - this.baseIndex)) applyStep(state, step);
    return state;
  }
}

export type { HistoryLine };

/**
 * The revisions a migrate store handed out. A merged view has no revision of
 * its own: each of its revisions names a point on a line of recorded steps
 * (`<line>.<index>`), from which both sides' revisions and records are
 * rebuilt when a watch resumes there. Lines and steps are bounded; a revision
 * that fell out is REVISION_TOO_OLD, and the caller relists.
 */
export class ViewHistory {
  private readonly lines = new Map<number, HistoryLine>();
  private nextId = 1;

  constructor(
    /** Lines kept; the least recently extended are dropped first. */
    private readonly maxLines = 32,
    /** Steps kept per line. */
    private readonly maxSteps = 10_000,
  ) {}

  /** A new line from `state` (copied); its revision 0 is `state`. */
  start(prefix: string, state: ViewState): { line: HistoryLine; revision: string } {
    const line = new HistoryLine(this.nextId++, prefix, copyState(state), this.maxSteps);
    this.lines.set(line.id, line);
    for (const id of this.lines.keys()) {
      if (this.lines.size <= this.maxLines) break;
      this.lines.delete(id);
    }
    return { line, revision: `${line.id}.0` };
  }

  /** Keeps `line` among the most recent. */
  touch(line: HistoryLine): void {
    this.lines.delete(line.id);
    this.lines.set(line.id, line);
  }

  /**
   * The state at `revision`, for a watch of `prefix`, and the changes the line
   * emitted after it (a watch resumed there shows the same ones, not the
   * intermediate states between them); undefined when no longer kept or when
   * the line covers less than `prefix`.
   */
  resumeAt(revision: string, prefix: string): { state: ViewState; planned: { key: RecordKey; value: MergedValue | undefined }[] } | undefined {
    const match = /^(\d+)\.(\d+)$/.exec(revision);
    if (!match) return undefined;
    const line = this.lines.get(Number(match[1]));
    if (!line || !prefix.startsWith(line.prefix)) return undefined;
    const index = Number(match[2]);
    const state = line.stateAt(index);
    if (!state) return undefined;
    return { state: copyState(state, prefix), planned: line.emittedAfter(index).filter((p) => p.key.startsWith(prefix)) };
  }
}
