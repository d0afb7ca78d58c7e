/**
 * `queued`: waiting for capacity (or for a retry's backoff); `pending`: its pod
 * exists but does not run yet; `running`; `unknown`: the pod's phase is Unknown
 * (its node stopped reporting), bounded by `timeouts.unknown`; then one terminal
 * phase: `succeeded` (the task container exited 0), `failed`, `timed-out` (a
 * queue, pending or run timeout, or the kubelet's deadline), `cancelled`, `lost`
 * (the pod was deleted, evicted or its node lost behind the runner's back —
 * never counted a success). The `reason` codes are in the README.
 */
export type TaskPhase = 'queued' | 'pending' | 'running' | 'unknown' | 'succeeded' | 'failed' | 'timed-out' | 'cancelled' | 'lost';

/**
 * Why a pod is still pending, each with its own timer. `gated`: the pod has
 * scheduling gates (`spec.schedulingGates`, e.g. Kueue's admission); the
 * start timeout does not count this wait.
 */
export type PendingCause = 'gated' | 'scheduling' | 'unschedulable' | 'image-pull' | 'container-config' | 'initializing' | 'starting';
