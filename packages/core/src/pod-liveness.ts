import { deleteRecord } from './delete-record.js';
import { ConfigurationError } from './errors.js';
import { parseTime } from './lease-record.js';
import type { LivenessContext, LivenessStrategy, MemberKeeping } from './liveness-strategy.js';
import { podMemberListingOf } from './pod-member-listing.js';
import { podReadinessOf, type PodReadinessSource, type PodReadinessWatch } from './pod-readiness.js';
import { MEMBER_PREFIX, parseKey } from './record-key.js';
import { heartbeatJudged, podUidOf } from './record-liveness.js';
import type { CacheEntry } from './watch-cache.js';

/** One role's readiness as this process knows it: undefined until the first list. */
interface RoleView {
  ready: ReadonlySet<string> | undefined;
  watch: PodReadinessWatch;
}

/**
 * The `pod` liveness mode: a member in a pod is alive while its pod exists and
 * is Ready — the kubelet's own status — so its record is written on announce,
 * payload change and withdraw only, and says which pod it lives in (by uid).
 * Readers follow the readiness of the pods of each role they read with one
 * watch through the backend's {@link PodReadinessSource} and vouch for a
 * member while its pod is Ready; when it is not (its container exited, the pod
 * was deleted, its node was lost), readers report it `removed`, reason
 * `expired`, with its last data, and `added` again if the same pod turns Ready
 * again. Nothing is deleted by readers: the record goes when the member
 * withdraws, or with its pod (its owner on Kubernetes).
 *
 * A member outside a pod (the CLI, off-cluster workers, tests) keeps
 * heartbeats as in the `heartbeat` mode, and readers judge its lease.
 * @internal
 */
export class PodLiveness implements LivenessStrategy {
  readonly mode = 'pod' as const;
  private readonly source: PodReadinessSource;
  private readonly roles = new Map<string, RoleView>();
  private closed = false;
  /** When this process's registry opened (wall clock): a pod member record acquired before it is an earlier container's. */
  private readonly openedAt: number;

  constructor(private readonly context: LivenessContext) {
    this.openedAt = context.clock.wallNow().getTime();
    const source = podReadinessOf(context.backend);
    if (!source) {
      throw new ConfigurationError(`registry.member.liveness=pod needs a backend that reports pod readiness (kubernetes); the ${context.backend.backend} backend does not`, { key: 'registry.member.liveness', backend: context.backend.backend });
    }
    this.source = source;
  }

  keeping(role: string): MemberKeeping {
    const podUid = this.source.podUid;
    if (podUid === undefined) return { heartbeatKey: undefined, heartbeats: true, liveness: { mode: 'heartbeat' } };
    return {
      heartbeatKey: undefined,
      heartbeats: false,
      liveness: { mode: 'pod', podUid },
      prepare: async () => {
        await this.source.assertServed(role);
        await this.sweep(role, podUid);
      },
    };
  }

  /**
   * Deletes what an earlier container of this pod announced in `role`: its
   * records say this pod and were acquired before this process opened its
   * registry. They would otherwise come back with the pod's next Ready. The
   * backend's list of this pod's records where it has one (independent of the
   * role's size), else one list of the role. Compare-and-set: a record written meanwhile stays.
   */
  private async sweep(role: string, podUid: string): Promise<void> {
    const prefix = `${MEMBER_PREFIX}${role}/`;
    const listing = podMemberListingOf(this.context.backend);
    const { records } = listing ? await listing.listPodMembers(role, podUid) : await this.context.store.list(prefix);
    for (const stored of records) {
      const liveness = stored.record.liveness;
      const acquired = parseTime(stored.record.acquireTime)?.getTime();
      if (!stored.key.startsWith(prefix) || liveness?.mode !== 'pod' || liveness.podUid !== podUid || acquired === undefined || acquired >= this.openedAt) continue;
      this.context.logger.info({ key: stored.key }, '[rollcall] removing a member an earlier container of this pod announced');
      await deleteRecord(this.context.store, stored.key, stored);
    }
  }

  readersExpire(entry: CacheEntry): boolean {
    return heartbeatJudged(entry);
  }

  vouches(entry: CacheEntry): boolean {
    const podUid = podUidOf(entry);
    if (podUid === undefined) return true;
    const role = parseKey(entry.key)?.role;
    if (role === undefined) return true;
    // A role read through roles() (every role) starts its readiness watch at its first pod member.
    return this.view(role)?.ready?.has(podUid) ?? false;
  }

  /** The first `members()` of a role waits for its readiness, so a Ready pod's member is in the answer. */
  async ready(role: string): Promise<void> {
    await this.view(role)?.watch.listed;
  }

  reading(role: string): void {
    this.view(role);
  }

  close(): void {
    this.closed = true;
    this.roles.forEach((v) => v.watch.close());
    this.roles.clear();
  }

  /** The role's view, its watch started on first use (one per role this process reads). */
  private view(role: string): RoleView | undefined {
    if (this.closed) return undefined;
    let view = this.roles.get(role);
    if (view) return view;
    const created: RoleView = { ready: undefined, watch: undefined! };
    this.roles.set(role, created);
    created.watch = this.source.watchRole(role, (ready) => this.changed(role, created, ready));
    // A failed first list is the reader's to see (members() rejects); the watch keeps trying.
    created.watch.listed.catch((err: unknown) => this.context.logger.warn({ err, role }, '[rollcall] cannot read pod readiness for this role; its pod members stay hidden until it can'));
    return created;
  }

  /** Judges again the members whose pod's readiness changed. */
  private changed(role: string, view: RoleView, ready: ReadonlySet<string>): void {
    const before = view.ready ?? new Set<string>();
    view.ready = new Set(ready);
    for (const entry of this.context.cache.list(`${MEMBER_PREFIX}${role}/`)) {
      const podUid = podUidOf(entry);
      if (podUid !== undefined && before.has(podUid) !== ready.has(podUid)) this.context.rejudge(entry.key);
    }
  }
}
