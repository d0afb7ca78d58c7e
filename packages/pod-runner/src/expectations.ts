import type { Pod } from './pod.js';
import { atOrAfter } from './task-store.js';

/** How long a create issued and not yet seen by the informer blocks another: past it, the sync resolves it with a GET. Milliseconds. */
export const EXPECTATION_TTL_MS = 30_000;

/** A pod create this term issued (or whose answer it lost) and its informer has not shown yet. */
export interface Expectation {
  podName: string;
  attempt: number;
  /** When the create was issued (wall-clock ms). */
  since: number;
}

/**
 * Where an expectation stands against the informer's pods: `seen` (the pod is
 * in the cache: drop it), `waiting` (until `since + ttl`), or `expired` (GET the
 * pod, then adopt it or forget the expectation: `resolveCreate`).
 */
export function expectationState(e: Expectation, pods: readonly Pod[], now: number, ttlMs = EXPECTATION_TTL_MS): 'seen' | 'waiting' | 'expired' {
  if (pods.some((p) => p.metadata.name === e.podName)) return 'seen';
  return now >= e.since + ttlMs ? 'expired' : 'waiting';
}

/**
 * The term's expectations: a create, one per task at most (a task has one
 * attempt to create at a time), and a release patch answered, one per pod.
 * Held in memory only: a new term starts with none, and its informer's first
 * list shows every create and release that landed.
 */
export class Expectations {
  private readonly byTask = new Map<string, Expectation>();
  /** Release patches answered and not yet shown by the informer: pod name → the resourceVersion the answer carried. */
  private readonly releases = new Map<string, string>();

  /** A create of `podName` was issued at `now`. */
  expect(taskId: string, podName: string, attempt: number, now: number): void {
    this.byTask.set(taskId, { podName, attempt, since: now });
  }

  /** The task's expectation, dropped first when its pod is among `pods` (the informer has seen it). */
  get(taskId: string, pods: readonly Pod[]): Expectation | undefined {
    const e = this.byTask.get(taskId);
    if (e && pods.some((p) => p.metadata.name === e.podName)) return void this.byTask.delete(taskId);
    return e;
  }

  /** A create answered without a pod (refused, or resolved as not landed): nothing to wait for. */
  forget(taskId: string): void {
    this.byTask.delete(taskId);
  }

  /** Creates expected (releases aside). */
  get size(): number {
    return this.byTask.size;
  }

  /** A release patch of `podName` was answered at `resourceVersion`: until the informer shows that version, the pod's cached copy is older than what this term wrote. */
  released(podName: string, resourceVersion: string | undefined): void {
    if (resourceVersion) this.releases.set(podName, resourceVersion);
  }

  /**
   * Whether a release of `pod` (as cached) is answered already and the informer
   * has not shown it: another would be sent at a stale resourceVersion (a 409).
   * Dropped once the cache holds that version or a later one.
   */
  releaseUnseen(pod: Pod): boolean {
    const { name, resourceVersion } = pod.metadata;
    const answered = this.releases.get(name);
    if (answered === undefined) return false;
    if (resourceVersion !== undefined && atOrAfter(resourceVersion, answered)) {
      this.releases.delete(name);
      return false;
    }
    return true;
  }

  /** The pod is gone: nothing to wait for. */
  podGone(podName: string): void {
    this.releases.delete(podName);
  }
}
