import { type Clock, hasCode, type Logger } from '@rollcall/core';
import { delayUntilWall } from './pod-time.js';
import { CANCELLED_ANNOTATION, FINALIZER, type Pod, RECORDED_ANNOTATION } from './pod.js';
import type { PodsApi } from './pods-api.js';
import type { TaskState } from './task-state.js';

/** Pause before letting go of a finished pod again after a failed attempt. Milliseconds. */
const RELEASE_RETRY_MS = 1000;

/** What {@link PodReleaser} takes. */
export interface PodReleaserOptions {
  api: PodsApi;
  clock: Clock;
  logger: Logger;
  /** Keep the pod of a task that did not succeed this long after it is recorded. Milliseconds; 0 deletes at once. */
  keepFailedPodsMs: number;
  /** The pod's latest state from the watch's cache. */
  latest: (name: string) => Pod | undefined;
  /** The runner is closed: start nothing. */
  closed: () => boolean;
  /** Resolves once the task's terminal status is in the ledger (true), or with false when it cannot be (the runner closed): the pod is then kept for the next runner. */
  untilRecorded?: (state: TaskState) => Promise<boolean>;
  /** Resolves once the task's log is stored as far as it must be before its pod is deleted (see LogCapture.untilLogged). */
  untilLogged?: (state: TaskState) => Promise<void>;
}

/**
 * Lets the pod of a recorded task go: the final status onto the pod and the
 * finalizer off in one patch, then delete it (or keep a failed one a while).
 * One release per task at a time; a pod that changed meanwhile is released
 * again from its new state, and a failed release is retried.
 */
export class PodReleaser {
  constructor(private readonly options: PodReleaserOptions) {}

  release(state: TaskState): Promise<void> {
    const pod = state.pod;
    if (!pod || this.options.closed()) return Promise.resolve();
    const release = state.release;
    if (release.inFlight) {
      release.again = true;
      return release.inFlight;
    }
    release.inFlight = this.releasePod(pod, state).finally(() => {
      release.inFlight = undefined;
      if (release.again && state.pod && state.pod !== pod) {
        release.again = false;
        void this.release(state);
      }
    });
    return release.inFlight;
  }

  /**
   * The delayed delete of a kept failed pod: gone already is done; any other
   * refusal (an outage, a 403, a 429) is logged and tried again after a pause,
   * never left as an unhandled rejection.
   */
  private async deleteKept(name: string, state: TaskState): Promise<void> {
    state.release.deleteTimer = undefined;
    if (this.options.closed()) return;
    try {
      await this.options.api.delete(name, undefined);
    } catch (err) {
      // gone already, or this runner's term may be over (whoever leads next deletes it)
      if (hasCode(err, 'NOT_FOUND') || hasCode(err, 'LEASE_LOST')) return;
      this.options.logger.warn({ err, pod: name }, '[rollcall] [pod-runner] could not delete a kept failed pod; trying again');
      if (this.options.closed()) return;
      state.release.deleteTimer = this.options.clock.setTimeout(() => void this.deleteKept(name, state), RELEASE_RETRY_MS);
    }
  }

  /** Releases `pod`; `state` undefined for a finished pod of an earlier attempt (nothing to record, no retry). */
  async releasePod(pod: Pod, state: TaskState | undefined): Promise<void> {
    const { api, clock, logger } = this.options;
    const name = pod.metadata.name;
    // the ledger holds the final status before the finalizer (the pod's own record of it) comes off
    if (state && (await this.options.untilRecorded?.(state)) === false) return;
    try {
      if (pod.metadata.finalizers?.includes(FINALIZER)) {
        const annotations: Record<string, string> = {};
        if (state) annotations[RECORDED_ANNOTATION] = JSON.stringify(state.status);
        if (state?.status.phase === 'cancelled') annotations[CANCELLED_ANNOTATION] = state.status.message ?? 'cancelled';
        // resourceVersion: another controller's finalizer added meanwhile is not dropped; on a conflict the next event retries
        await api.patchMetadata(name, { resourceVersion: pod.metadata.resourceVersion, finalizers: pod.metadata.finalizers.filter((f) => f !== FINALIZER), annotations });
      }
      if (pod.metadata.deletionTimestamp || state?.release.deleteRequested) return;
      const keepMs = this.options.keepFailedPodsMs;
      if (state && keepMs > 0 && state.status.phase !== 'succeeded' && state.status.phase !== 'cancelled') {
        state.release.deleteRequested = true;
        const finished = Date.parse(state.status.finishedAt ?? clock.wallNow().toISOString());
        state.release.deleteTimer = clock.setTimeout(() => void this.deleteKept(name, state), delayUntilWall(clock, finished + keepMs));
        return;
      }
      if (state) state.release.deleteRequested = true;
      // the log's last lines stored before the pod goes (a kept pod stays long enough)
      if (state) await this.options.untilLogged?.(state);
      await api.delete(name, state?.release.graceSeconds);
    } catch (err) {
      if (hasCode(err, 'NOT_FOUND')) return;
      if (!state) return;
      // held back by the fence: this runner's term may be over, and whoever leads next re-attaches and releases it
      if (hasCode(err, 'LEASE_LOST')) return void (state.release.deleteRequested = false);
      state.release.deleteRequested = false;
      logger.debug({ err, pod: name }, '[rollcall] [pod-runner] could not release a finished pod yet; retrying from its latest state');
      // A conflict means the watch brings a newer state; a refusal or an outage is retried after a pause.
      state.release.deleteTimer?.cancel();
      state.release.deleteTimer = clock.setTimeout(() => {
        const latest = this.options.latest(name);
        if (latest && state.pod) {
          state.pod = latest;
          void this.release(state);
        }
      }, RELEASE_RETRY_MS);
    }
  }
}
