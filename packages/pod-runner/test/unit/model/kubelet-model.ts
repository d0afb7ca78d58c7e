import type { Pod, PodCondition } from '../../../src/pod.js';
import { readPod } from '../../../src/pod-status.js';
import type { Rng } from './random.js';

// What the kubelet, the scheduler and the controllers write on a pod, as Kubernetes writes it
// (the shapes of kubelet-endings.test.ts): every ending pod-status.ts knows, each reachable here.

const iso = (ms: number) => new Date(ms).toISOString();
const condition = (pod: Pod, c: PodCondition) => {
  const status = (pod.status ??= {});
  status.conditions = [...(status.conditions ?? []).filter((x) => x.type !== c.type), c];
};
const main = (pod: Pod, state: NonNullable<NonNullable<Pod['status']>['containerStatuses']>[number]['state']) => {
  (pod.status ??= {}).containerStatuses = [{ name: 'main', state }];
};
const terminate = (pod: Pod, exitCode: number, now: number, reason?: string) => {
  const started = pod.status?.containerStatuses?.[0]?.state?.running?.startedAt ?? pod.status?.startTime ?? iso(now);
  main(pod, { terminated: { exitCode, reason: reason ?? (exitCode === 0 ? 'Completed' : 'Error'), startedAt: started, finishedAt: iso(now) } });
};
const disruption = (reason: string, now: number): PodCondition => ({ type: 'DisruptionTarget', status: 'True', reason, message: reason, lastTransitionTime: iso(now) });
const failedBy = (pod: Pod, reason: string, message: string) => Object.assign((pod.status ??= {}), { phase: 'Failed', reason, message });

/** Whether the pod's task container can still change (not ended, by readPod's reading). */
export function podEnded(pod: Pod, now: number): boolean {
  const phase = readPod(pod, new Date(now)).phase;
  return phase !== 'pending' && phase !== 'running' && phase !== 'unknown';
}

/** Every way a live pod moves on, by name: the model picks one at random. */
export const TRANSITIONS: Record<string, (pod: Pod, now: number) => void> = {
  schedule: (p, now) => {
    condition(p, { type: 'PodScheduled', status: 'True', lastTransitionTime: iso(now) });
    p.spec.nodeName = 'n1';
  },
  unschedulable: (p, now) => condition(p, { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes', lastTransitionTime: iso(now) }),
  imagePull: (p, now) => {
    Object.assign((p.status ??= {}), { startTime: p.status?.startTime ?? iso(now) });
    main(p, { waiting: { reason: 'ImagePullBackOff', message: 'back-off pulling' } });
  },
  invalidImage: (p) => main(p, { waiting: { reason: 'InvalidImageName', message: 'bad name' } }),
  ungate: (p) => void (p.spec.schedulingGates = []),
  run: (p, now) => {
    if ((p.spec.schedulingGates ?? []).length > 0) return;
    Object.assign((p.status ??= {}), { phase: 'Running', startTime: p.status?.startTime ?? iso(now) });
    main(p, { running: { startedAt: iso(now) } });
  },
  succeed: (p, now) => {
    terminate(p, 0, now);
    p.status!.phase = 'Succeeded';
  },
  fail: (p, now) => {
    terminate(p, 1, now);
    p.status!.phase = 'Failed';
  },
  oom: (p, now) => {
    terminate(p, 137, now, 'OOMKilled');
    p.status!.phase = 'Failed';
  },
  deadline: (p, now) => {
    terminate(p, 137, now);
    failedBy(p, 'DeadlineExceeded', 'active longer than its deadline');
  },
  evictedByKubelet: (p, now) => {
    condition(p, disruption('TerminationByKubelet', now));
    terminate(p, 137, now);
    failedBy(p, 'Evicted', 'low on memory');
  },
  preemptedByKubelet: (p, now) => {
    condition(p, disruption('TerminationByKubelet', now));
    terminate(p, 0, now);
    failedBy(p, 'Preempting', 'Preempted in order to admit critical pod');
  },
  shutdown: (p, now) => {
    condition(p, disruption('TerminationByKubelet', now));
    terminate(p, 0, now + 1000);
    failedBy(p, 'Terminated', 'Pod was terminated in response to imminent node shutdown.');
  },
  podGC: (p, now) => {
    condition(p, disruption('DeletionByPodGC', now));
    Object.assign((p.status ??= {}), { phase: 'Failed' });
    p.metadata.deletionTimestamp = iso(now);
    p.metadata.deletionGracePeriodSeconds = 0;
  },
  unknown: (p, now) => {
    condition(p, { type: 'Ready', status: 'False', lastTransitionTime: iso(now) });
    Object.assign((p.status ??= {}), { phase: 'Unknown', reason: 'NodeLost', message: 'node n1 not responding' });
  },
  disrupted: (p, now) => {
    condition(p, disruption(['EvictionByEvictionAPI', 'PreemptionByScheduler', 'DeletionByTaintManager'][now % 3]!, now));
    p.metadata.deletionTimestamp = iso(now + 30_000);
    p.metadata.deletionGracePeriodSeconds = 30;
  },
  /** Someone else's delete (kubectl, a namespace cleanup). */
  deleted: (p, now) => {
    p.metadata.deletionTimestamp = iso(now + 30_000);
    p.metadata.deletionGracePeriodSeconds = 30;
  },
};

/** A transition that applies to the pod as it is: undefined when it has nothing left to do. */
export function nextTransition(pod: Pod, now: number, rng: Rng): string | undefined {
  if (pod.metadata.deletionTimestamp) return podEnded(pod, now) ? undefined : 'succeed'; // the SIGTERM handler exits 0 within the grace
  if (podEnded(pod, now)) return undefined;
  if ((pod.spec.schedulingGates ?? []).length > 0) return rng.pick(['ungate', 'ungate', 'deleted']);
  const phase = pod.status?.phase;
  if (phase === 'Unknown') return rng.pick(['run', 'fail', 'podGC']);
  if (phase !== 'Running') return rng.pick(['schedule', 'unschedulable', 'imagePull', 'run', 'run', 'run', 'invalidImage', 'deleted', 'disrupted']);
  return rng.pick(['succeed', 'succeed', 'fail', 'oom', 'deadline', 'evictedByKubelet', 'preemptedByKubelet', 'shutdown', 'podGC', 'unknown', 'disrupted', 'deleted']);
}

/** In a quiet cluster every pod ends: gates lifted, then it runs and succeeds (a deleted one exits). */
export function settle(pod: Pod, now: number): string | undefined {
  if (podEnded(pod, now)) return undefined;
  if ((pod.spec.schedulingGates ?? []).length > 0) return 'ungate';
  return 'succeed';
}
