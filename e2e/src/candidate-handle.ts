import { monotonicMs } from '@rollcall/tools/testenv/monotonic';
import type { CandidateCommand, CandidateEvent, CandidateSpec } from './protocol.js';

/** What every reported event has: its CLOCK_MONOTONIC stamp, and its line number in its process. */
export interface StampedEvent {
  type: string;
  t: number;
  n: number;
}

/** One process's life on the timeline: what it reported and what was done to it. `E`: its events (the soak candidate's by default). */
export interface IncarnationRecord<E extends StampedEvent = CandidateEvent> {
  name: string;
  incarnation: number;
  pid: number;
  startedAt: number;
  /** Everything it reported, in the order it reported it. */
  events: E[];
  /** SIGSTOP to SIGCONT; `to` is undefined while stopped. */
  pauses: { from: number; to: number | undefined }[];
  killedAt: number | undefined;
  /** When the coordinator asked it to shut down. */
  shutdownAt: number | undefined;
  exitedAt: number | undefined;
  exit: { code: number | null; signal: string | null } | undefined;
  /** Its stderr (the registry's warnings and errors). */
  logFile: string;
}

/** The record of an incarnation that starts now: nothing reported or done to it yet. */
export function newIncarnation<E extends StampedEvent = CandidateEvent>(spec: Pick<CandidateSpec, 'name' | 'incarnation'>, pid: number, logFile: string): IncarnationRecord<E> {
  return { name: spec.name, incarnation: spec.incarnation, pid, startedAt: monotonicMs(), events: [], pauses: [], killedAt: undefined, shutdownAt: undefined, exitedAt: undefined, exit: undefined, logFile };
}

/**
 * The coordinator's handle on one incarnation of a candidate, wherever it runs
 * (a child process, a container in a pod): its record on the timeline, its
 * events, the signals the soak sends it, its shutdown. Every signal is stamped
 * on the same CLOCK_MONOTONIC as the candidate's own events.
 */
export interface CandidateHandle<C = CandidateCommand, E extends StampedEvent = CandidateEvent> {
  readonly record: IncarnationRecord<E>;
  readonly name: string;
  readonly alive: boolean;
  /** Between `pause()` and `resume()`. */
  readonly stopped: boolean;
  send(command: C): void;
  /** Resolves with the first reported event (past or future) that matches; rejects when the incarnation ends first or after `timeoutMs`. */
  event<T extends E['type']>(type: T, timeoutMs: number, match?: (e: Extract<E, { type: T }>) => boolean): Promise<Extract<E, { type: T }>>;
  /** SIGKILL; resolves once the incarnation is gone. */
  kill(): Promise<void>;
  /** SIGSTOP: it stops running, its sockets stay open. */
  pause(): void;
  /** SIGCONT after `pause()`. */
  resume(): void;
  /** Asks it to close its registry and exit; SIGKILLs it (a failure, recorded as such) if it has not exited within `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<boolean>;
  describe(): string;
}

/** Receives every event of an incarnation as it arrives. */
export type EventSink = (candidate: CandidateHandle, event: CandidateEvent) => void;

/**
 * Where a cluster's candidates run. `start` begins the incarnation `spec`
 * describes (after a SIGKILL, its predecessor is gone) and returns its handle;
 * the cluster then waits for its `ready`.
 */
export interface CandidateRunner {
  start(spec: CandidateSpec, logFile: string, onEvent: EventSink): Promise<CandidateHandle>;
}
