/** What `registerRollcallMetrics` takes beyond the registries. */
export interface RollcallMetricsOptions {
  /**
   * Roles whose members `rollcall_members` counts, each watched through
   * `watchMembers`. Default: every role whose member events reach the registry
   * (with a registry that watches only what it reads, the roles the
   * application reads).
   */
  roles?: readonly string[];
  /**
   * Elections to observe without campaigning (`registry.observe`), for
   * `rollcall_election_leader_present`, `rollcall_election_fencing_token` and
   * `rollcall_election_leader_changes_total`; `'all'`: every election of the
   * cluster, through `watchElections` (for a cluster-wide exporter such as
   * `rollcall watch --metrics-port`). Elections this process campaigns in
   * are always counted. Default: none.
   */
  elections?: readonly string[] | 'all';
  /**
   * With `elections: 'all'`: the most elections given series at once, so
   * whoever may create records cannot grow the label set without bound;
   * further ones are counted in `rollcall_elections_unobserved`, and an
   * election's series go when it does. Default 1000.
   */
  maxObservedElections?: number;
  /**
   * The `lock` label of a lock name. Lock names that are unbounded (one per
   * job, one per row) must map to a bounded set here, e.g.
   * `(name) => name.replace(/-\d+$/, '')`. Default: the name itself.
   */
  lockLabel?: (name: string) => string;
  /**
   * Upper bounds of `rollcall_backend_request_duration_seconds`, seconds.
   * Default: {@link DEFAULT_REQUEST_BUCKETS_SECONDS}, 1 ms to 10 s (the
   * default request timeout is 5 s).
   */
  requestDurationBuckets?: readonly number[];
}

/** 1 ms (an embedded or in-memory store) to 10 s (past the default 5 s request timeout). Seconds. */
export const DEFAULT_REQUEST_BUCKETS_SECONDS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
