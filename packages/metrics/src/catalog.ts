/** One metric `registerRollcallMetrics` exports: its name, type, labels and meaning. */
export interface MetricSpec {
  name: string;
  type: 'gauge' | 'counter' | 'histogram';
  labels: readonly string[];
  help: string;
}

function spec<const T extends MetricSpec['type'], const L extends readonly string[]>(name: string, type: T, labels: L, help: string) {
  return { name, type, labels, help } as const;
}

/**
 * Every metric, by the key the code uses. Labels are bounded: states, roles,
 * election and lock names the process itself uses, operations and error codes;
 * never a member id or an identity. The README's table and the Grafana
 * dashboard's test are generated from / checked against this list.
 */
export const METRICS = {
  registryInfo: spec('rollcall_registry_info', 'gauge', ['backend', 'cluster'], 'Always 1; the backend and cluster of this process\'s registry.'),
  connectionState: spec('rollcall_connection_state', 'gauge', ['state'], '1 for the connection state now (connected, suspended or lost), 0 for the other two.'),
  connectionChanges: spec('rollcall_connection_changes_total', 'counter', ['state'], 'Connection state changes, by what happened: suspended, lost, reconnected.'),
  members: spec('rollcall_members', 'gauge', ['role'], 'Members this process sees now, by role.'),
  memberEvents: spec('rollcall_member_events_total', 'counter', ['role', 'event', 'reason'], 'Member changes seen, by role: added, updated (payload changed), removed (reason deleted, expired, corrupt or replaced: a new incarnation under the same id).'),
  electionLeader: spec('rollcall_election_leader', 'gauge', ['election'], '1 while this process leads the election, else 0; for each election it campaigns in.'),
  electionLeaderPresent: spec('rollcall_election_leader_present', 'gauge', ['election'], '1 while the election has a leader by this process\'s view, else 0; for each election it observes.'),
  electionFencingToken: spec('rollcall_election_fencing_token', 'gauge', ['election'], 'The latest term\'s fencing token this process has seen: its own when elected, the leader\'s of an observed election.'),
  leadershipChanges: spec('rollcall_leadership_changes_total', 'counter', ['election', 'event', 'reason'], 'This process\'s leadership transitions: elected, lost (reason released, renew-deadline, taken, deleted, connection-lost, closed or failed).'),
  electionLeaderChanges: spec('rollcall_election_leader_changes_total', 'counter', ['election'], 'Leader changes of an observed election: a new leader, a new term, or none.'),
  electionsUnobserved: spec('rollcall_elections_unobserved', 'gauge', [], 'Elections of an `elections: \'all\'` view given no series because maxObservedElections were in use: the label set stays bounded whatever the cluster holds.'),
  lockHeld: spec('rollcall_lock_held', 'gauge', ['lock'], 'Holds of the lock this process has now (0 or 1; more when several names share one label).'),
  lockFencingToken: spec('rollcall_lock_fencing_token', 'gauge', ['lock'], 'The fencing token of this process\'s latest hold of the lock.'),
  lockChanges: spec('rollcall_lock_changes_total', 'counter', ['lock', 'event', 'reason'], 'This process\'s lock transitions: acquired, lost (reason released, renew-deadline, taken, deleted, connection-lost or closed).'),
  failoversStarted: spec('rollcall_failovers_started_total', 'counter', ['role'], 'Failover handlers this process started, by the role failed over (each run: a retry after a rejection counts again).'),
  failoversResumed: spec('rollcall_failovers_resumed_total', 'counter', ['role'], 'Of those started, the runs on an incarnation an earlier leader\'s term claimed and did not acknowledge (its effects may be partly done).'),
  failoversAcknowledged: spec('rollcall_failovers_acknowledged_total', 'counter', ['role', 'reason'], 'Failovers this process acknowledged (the handler resolved and its ack landed: never run again), by role and removal reason: withdrawn (with includeWithdrawn), expired, deleted, replaced, corrupt, unseen.'),
  failoversPending: spec('rollcall_failovers_pending', 'gauge', ['role'], 'Incarnations of the role this process\'s failover claimed and has not acknowledged yet (running or waiting to retry); 0 while it does not lead.'),
  backendRequests: spec('rollcall_backend_requests_total', 'counter', ['operation', 'code'], 'Calls to the backend by operation (get, create, update, delete, list, watch, assertCanHold) and outcome: OK or the error code (CONFLICT, UNAVAILABLE, ...).'),
  backendRequestDuration: spec('rollcall_backend_request_duration_seconds', 'histogram', ['operation', 'code'], 'Time from a backend call to its answer (the request timeout when it timed out), by operation and outcome; watches, which are streams, are not in it.'),
  watchEvents: spec('rollcall_watch_events_total', 'counter', ['type'], 'Events the backend watch delivered: put, delete, corrupt, progress.'),
  watchRestarts: spec('rollcall_watch_restarts_total', 'counter', ['code'], 'Backend watches that broke and were started again, by the error code that broke them.'),
  watchRelists: spec('rollcall_watch_relists_total', 'counter', [], 'Relists: a watch broke with REVISION_TOO_OLD, so the registry listed again before watching.'),
} as const satisfies Record<string, MetricSpec>;

/**
 * Every metric `registerPodRunnerMetrics` exports, by the key the code uses:
 * a pod runner's tasks, queue, pending time, requeues, retries, watch and API
 * requests. Labels are bounded: phases, pending causes, reasons (stable codes),
 * task types (the application's own, as few as its templates), verbs, resources
 * and error codes; never a task id.
 */
export const POD_RUNNER_METRICS = {
  podRunnerInfo: spec('rollcall_pod_runner_info', 'gauge', ['runner', 'namespace'], 'Always 1; the name and namespace of this process\'s pod runner.'),
  podRunnerLeader: spec('rollcall_pod_runner_leader', 'gauge', [], '1 while this runner acts on pods (it leads its election, or has no registry), else 0.'),
  podRunnerTasks: spec('rollcall_pod_runner_tasks', 'gauge', ['phase', 'task_type'], 'Tasks this runner holds that have not ended, by phase (queued, pending, running, unknown) and task type.'),
  podRunnerTasksFinished: spec('rollcall_pod_runner_tasks_finished_total', 'counter', ['phase', 'reason', 'task_type'], 'Terminal statuses this runner reported, by phase (succeeded, failed, timed-out, cancelled, lost), reason code and task type.'),
  podRunnerQueueDepth: spec('rollcall_pod_runner_queue_depth', 'gauge', [], 'Tasks waiting in the runner\'s queue for capacity or the end of a quota pause now (not those in a retry\'s backoff).'),
  podRunnerPendingSeconds: spec('rollcall_pod_runner_pending_seconds', 'histogram', ['cause'], 'Time a task\'s pod spent in one pending cause (gated, scheduling, unschedulable, image-pull, container-config, initializing, starting) before it left it, by the runner\'s clock.'),
  podRunnerRequeues: spec('rollcall_pod_runner_requeues_total', 'counter', ['reason'], 'Creates refused and put back at the head of the queue, by reason: QuotaExceeded, TooManyRequests (429), Conflict (a quota race), Unavailable (a create without an answer whose pod was not found when read back).'),
  podRunnerRetries: spec('rollcall_pod_runner_retries_total', 'counter', ['reason', 'task_type'], 'Attempts retried by their template\'s retry policy, by the ended attempt\'s reason (Evicted, NodeLost, Error, ...).'),
  podRunnerWatchRestarts: spec('rollcall_pod_runner_watch_restarts_total', 'counter', ['code'], 'Times the pod watch broke and was resumed, by error code (REVISION_TOO_OLD: relisted first).'),
  podRunnerRequests: spec('rollcall_pod_runner_requests_total', 'counter', ['verb', 'resource', 'code'], 'API requests of the runner, as the audit log names them (verb create, get, list, watch, patch, delete; resource pods, pods/log, events, podtemplates), by outcome: OK or the error code.'),
  podRunnerRequestDuration: spec('rollcall_pod_runner_request_duration_seconds', 'histogram', ['verb', 'code'], 'Time from an API request to its answer (for a watch or log stream: to its first byte of answer), by verb and outcome.'),
  podRunnerFencedWrites: spec('rollcall_pod_runner_fenced_writes_total', 'counter', ['verb'], 'Writes not sent because this runner\'s term may be over: its renew deadline passed, or a pod carries a newer term\'s fencing token.'),
} as const satisfies Record<string, MetricSpec>;

/** Every metric of the package, a registry's and a pod runner's, in the README's order. */
export const ALL_METRICS: readonly MetricSpec[] = [...Object.values(METRICS), ...Object.values(POD_RUNNER_METRICS)];

/** The name of every metric `registerRollcallMetrics` exports (histograms add `_bucket`, `_sum` and `_count` series). */
export const METRIC_NAMES: readonly string[] = Object.values(METRICS).map((m) => m.name);
