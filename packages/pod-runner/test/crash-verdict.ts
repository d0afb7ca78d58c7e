// The verdict of crash-every-write.test.ts, pure: what the children acknowledged (their status
// file) and what the API server created (its audit log) against what was asked of them.

/** One terminal status as an `onStatus` acknowledged it: a line of the children's append-only status file. */
export interface AckedEnd {
  taskId: string;
  attempt: number;
  phase: string;
  reason?: string;
  exitCode?: number;
  podName?: string;
  finishedAt?: string;
}

/** A pod create the API server answered (dry runs left out), from its audit log. */
export interface PodCreate {
  podName: string;
  /** The answer's HTTP status: 201 made the pod. */
  code: number;
}

/** A task attempt a scheduler asked for (a submit, a next attempt), whether its answer came back or the runner died first. */
export interface AskedAttempt {
  taskId: string;
  attempt: number;
}

/** What the verdict found wrong; none when the run kept every guarantee. */
export type Violation =
  /** An attempt acknowledged with more than one distinct end. */
  | { kind: 'two-ends'; taskId: string; attempt: number; ends: string[] }
  /** A pod (one attempt of one task) created more than once. */
  | { kind: 'two-creates'; podName: string; creates: number }
  /** An attempt asked for that no acknowledged end covers (that attempt or a retry after it). */
  | { kind: 'never-ended'; taskId: string; attempt: number };

/**
 * An end as the runner decided it. Delivery is at least once: a runner killed between
 * `onStatus` returning and the acknowledgement's write delivers the same stored status
 * again, so the same end may be acknowledged twice. A second *decision* differs in
 * phase, reason, exit code, pod or its `finishedAt` stamp.
 */
export const endOf = (e: AckedEnd): string => JSON.stringify([e.phase, e.reason ?? null, e.exitCode ?? null, e.podName ?? null, e.finishedAt ?? null]);

/**
 * The guarantees of a run killed at any write: exactly one acknowledged terminal
 * status per attempt (distinct ends counted, repeats of the same end allowed), at
 * most one pod create answered 201 per pod name (a pod is one attempt), and every
 * attempt asked for ended — the attempt itself or a later one (a retry policy's).
 */
export function crashVerdict(run: { asked: readonly AskedAttempt[]; acked: readonly AckedEnd[]; creates: readonly PodCreate[] }): Violation[] {
  const violations: Violation[] = [];
  const ends = new Map<string, { taskId: string; attempt: number; ends: Set<string> }>();
  for (const e of run.acked) {
    const key = JSON.stringify([e.taskId, e.attempt]);
    const entry = ends.get(key) ?? { taskId: e.taskId, attempt: e.attempt, ends: new Set<string>() };
    entry.ends.add(endOf(e));
    ends.set(key, entry);
  }
  for (const { taskId, attempt, ends: distinct } of ends.values()) {
    if (distinct.size > 1) violations.push({ kind: 'two-ends', taskId, attempt, ends: [...distinct] });
  }
  const created = new Map<string, number>();
  for (const c of run.creates) if (c.code === 201) created.set(c.podName, (created.get(c.podName) ?? 0) + 1);
  for (const [podName, creates] of created) if (creates > 1) violations.push({ kind: 'two-creates', podName, creates });
  for (const { taskId, attempt } of run.asked) {
    if (!run.acked.some((e) => e.taskId === taskId && e.attempt >= attempt)) violations.push({ kind: 'never-ended', taskId, attempt });
  }
  return violations;
}

/** How many acknowledgements repeated an end already acknowledged (at-least-once delivery across a kill). */
export function redeliveries(acked: readonly AckedEnd[]): number {
  return acked.length - new Set(acked.map((e) => JSON.stringify([e.taskId, e.attempt, endOf(e)]))).size;
}
