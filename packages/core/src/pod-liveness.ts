import type { Timer } from './clock.js';
import { deleteRecord } from './delete-record.js';
import { ConfigurationError, ErrorCode, hasCode } from './errors.js';
import { parseTime, type RecordLiveness } from './lease-record.js';
import { HeartbeatKeeper, LeaseJudgedLiveness } from './heartbeat-liveness.js';
import { podUidOf, type KeptMember, type LivenessContext, type LivenessStrategy, type MemberKeeper, type RecordJudging, type Verdict } from './member-liveness.js';
import { podMemberListingOf } from './pod-member-listing.js';
import { podReadinessOf, type PodReadinessSource, type PodReadinessWatch, type SelfProbeAnswer } from './pod-readiness.js';
import { MEMBER_PREFIX, parseKey } from './record-key.js';
import type { CacheEntry } from './watch-cache.js';

/**
 * The `pod` liveness mode: a member in a pod is alive while its pod exists and
 * is Ready — the kubelet's own status — so its record is written on announce,
 * payload change and withdraw only, and says which pod it lives in (by uid).
 * Readers judge it by its pod ({@link PodRecords}), as readers of every mode do.
 *
 * A member outside a pod (the CLI, off-cluster workers, tests) keeps
 * heartbeats as in the `heartbeat` mode, and readers judge its lease.
 * @internal
 */
export class PodLiveness extends LeaseJudgedLiveness {
  readonly mode = 'pod' as const;
  private readonly source: PodReadinessSource;
  /** When this process's registry opened (wall clock): a pod member record acquired before it is an earlier container's. */
  private readonly openedAt: number;

  constructor(
    private readonly context: LivenessContext,
    reaperRecords: RecordJudging,
  ) {
    super(reaperRecords);
    this.openedAt = context.clock.wallNow().getTime();
    const source = podReadinessOf(context.backend);
    if (!source) {
      throw new ConfigurationError(`registry.member.liveness=pod needs a backend that reports pod readiness (kubernetes); the ${context.backend.backend} backend does not`, { key: 'registry.member.liveness', backend: context.backend.backend });
    }
    this.source = source;
  }

  keep(member: KeptMember): MemberKeeper {
    const podUid = this.source.podUid;
    if (podUid === undefined) return new HeartbeatKeeper(member);
    const deadline = this.context.member.podRenewDeadlineMs;
    return new PodKeeper(member, { mode: 'pod', podUid }, deadline > 0 ? deadline : undefined, this.source, async () => {
      await this.source.assertServed(member.role);
      await this.sweep(member.role, podUid);
    });
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
}

/**
 * Keeps a member in a pod: checked, then written once; its pod's readiness
 * vouches for it from then on. With `member.podRenewDeadlineMs`, it reads its
 * own record every `heartbeatIntervalMs` (a read, no write) and the member is
 * lost that long after the send of the last read that found it: cut off from
 * the API server, it stops before the node controller marks its pod not Ready.
 * Without, no deadline applies; a write or read that finds its record gone or
 * taken loses it either way. When the backend reports this process's own
 * readiness-probe answers (`onSelfProbe`), the member is also lost
 * (`probe-missed`) once the kubelet may have marked the pod not Ready with no
 * answer since: a paused or hung process stops before peers remove it.
 */
class PodKeeper implements MemberKeeper {
  private timer: Timer | undefined;
  private stopped = false;
  /** The last Ready answer of this process's own probe, and how long after it the kubelet may mark the pod not Ready. */
  private probe: SelfProbeAnswer | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly member: KeptMember,
    readonly liveness: RecordLiveness,
    readonly renewDeadlineMs: number | undefined,
    private readonly source: PodReadinessSource,
    /** Checked before the first write: the pod serves the role's readiness; an earlier container's records are gone. */
    private readonly prepare: () => Promise<void>,
  ) {}

  vouchedUntil(): number | undefined {
    return this.probe === undefined ? undefined : this.probe.at + this.probe.notReadyAfterMs;
  }

  async start(): Promise<void> {
    await this.prepare();
    await this.member.writeMember();
    // Its own probe's answers bound it too: a pause longer than the kubelet allows loses it before peers may remove it.
    this.unsubscribe = this.source.onSelfProbe?.((answer) => {
      if (this.stopped) return;
      // Past the bound the kubelet may have marked the pod not Ready and peers removed the member: a later answer (the
      // probe in flight at a resume) must not make it alive again before its overdue timer announces the loss.
      const until = this.vouchedUntil();
      if (until !== undefined && this.member.clock.now() >= until) return;
      this.probe = answer;
      this.member.vouched();
    });
    if (this.renewDeadlineMs !== undefined) this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.member.clock.setTimeout(() => {
      if (this.stopped) return;
      this.member
        .checkMember()
        .then((sentAt) => this.member.renewed(sentAt))
        .catch((err: unknown) => this.member.logger.debug({ err, key: this.member.key }, '[rollcall] member check failed'));
      this.schedule();
    }, this.member.timing.heartbeatIntervalMs);
  }

  /** After a reconnect: the record written again, which loses the member if it was deleted or taken meanwhile. */
  beat(): Promise<void> {
    return this.member.enqueue(async () => void (await this.member.writeMember()));
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.unsubscribe?.();
  }

  async withdrawn(): Promise<void> {}
}

/** One role's readiness as this process knows it. */
interface RoleView {
  /** The Ready pods; undefined until the first list. */
  ready: ReadonlySet<string> | undefined;
  /** This identity may not read the role's readiness (and no list has succeeded since): its pod members are judged by their record. */
  refused: boolean;
  watch: PodReadinessWatch | undefined;
  listed: Promise<void>;
}

/**
 * How a reader of any mode judges a pod member's record: by its pod. It
 * follows the readiness of the pods of each role with a pod member, with one
 * watch per role through the backend's {@link PodReadinessSource}, and vouches
 * for a member while its pod is Ready; when it is not (its container exited,
 * the pod was deleted, its node was lost), the member is reported `removed`,
 * reason `expired`, with its last data, and `added` again if the same pod
 * turns Ready again. Nothing is deleted by readers: the record goes when the
 * member withdraws, or with its pod (its owner on Kubernetes).
 *
 * A reader that cannot read readiness — its backend reports none, or it may
 * not read it (PERMISSION_DENIED, UNAUTHENTICATED: on Kubernetes, no
 * get/list/watch on EndpointSlices) — cannot tell a dead container from a live
 * one. It shows such a member while its record exists (on Kubernetes, until
 * its pod is deleted), marked `unverified`, and warns once per role naming
 * what is missing; the watch keeps trying, so a permission granted later
 * brings the judgement back. Any other failure of the first list (UNAVAILABLE)
 * rejects the role's first `members()`, and its pod members stay hidden until
 * it lists.
 * @internal
 */
export class PodRecords {
  private readonly source: PodReadinessSource | undefined;
  private readonly roles = new Map<string, RoleView>();
  private warnedNoSource = false;
  private closed = false;

  constructor(private readonly context: Pick<LivenessContext, 'backend' | 'cache' | 'logger' | 'rejudge'>) {
    this.source = podReadinessOf(context.backend);
  }

  /** What a reader makes of a pod member's record now. */
  verdict(entry: CacheEntry): Verdict {
    const podUid = podUidOf(entry)!;
    const role = parseKey(entry.key)?.role;
    if (role === undefined) return 'present';
    if (!this.source) {
      if (!this.warnedNoSource) this.context.logger.warn({ backend: this.context.backend.backend }, '[rollcall] pod members found on a backend that reports no pod readiness: shown while their records exist, unverified');
      this.warnedNoSource = true;
      return 'unverified';
    }
    // A role read through roles() (every role) starts its readiness watch at its first pod member.
    const view = this.view(role);
    if (!view) return 'absent';
    if (view.refused) return 'unverified';
    return view.ready?.has(podUid) ? 'present' : 'absent';
  }

  /** Resolves once `role`'s readiness is known, when it has a pod member: a first `members()` shows a Ready pod's member. */
  async ready(role: string): Promise<void> {
    if (!this.source || !this.context.cache.list(`${MEMBER_PREFIX}${role}/`).some((e) => podUidOf(e) !== undefined)) return;
    await this.view(role)?.listed;
  }

  close(): void {
    this.closed = true;
    this.roles.forEach((v) => v.watch?.close());
    this.roles.clear();
  }

  /** The role's view, its watch started on first use (one per role this process reads). */
  private view(role: string): RoleView | undefined {
    if (this.closed) return undefined;
    let view = this.roles.get(role);
    if (view) return view;
    const created: RoleView = { ready: undefined, refused: false, watch: undefined, listed: Promise.resolve() };
    this.roles.set(role, created);
    const watch = this.source!.watchRole(role, (ready) => this.changed(role, created, ready));
    created.watch = watch;
    created.listed = watch.listed.catch((err: unknown) => {
      if (!hasCode(err, ErrorCode.PERMISSION_DENIED, ErrorCode.UNAUTHENTICATED)) {
        this.context.logger.warn({ err, role }, '[rollcall] cannot read pod readiness for this role; its pod members stay hidden until it can');
        throw err;
      }
      // Hidden would read as "no members"; shown unverified is what this reader can honestly say.
      this.context.logger.warn({ err, role }, '[rollcall] may not read pod readiness for this role: its pod members are shown while their records exist, unverified (grant get/list/watch on the readiness source, e.g. `rollcall manifests --liveness pod`)');
      if (created.ready === undefined) {
        created.refused = true;
        this.rejudgeRole(role, () => true);
      }
    });
    created.listed.catch(() => {});
    return created;
  }

  /** Judges again the members whose pod's readiness changed. */
  private changed(role: string, view: RoleView, ready: ReadonlySet<string>): void {
    const before = view.refused ? undefined : (view.ready ?? new Set<string>());
    view.ready = new Set(ready);
    view.refused = false;
    // Listed now, whatever the first list said.
    view.listed = Promise.resolve();
    this.rejudgeRole(role, (podUid) => before === undefined || before.has(podUid) !== ready.has(podUid));
  }

  private rejudgeRole(role: string, changed: (podUid: string) => boolean): void {
    for (const entry of this.context.cache.list(`${MEMBER_PREFIX}${role}/`)) {
      const podUid = podUidOf(entry);
      if (podUid !== undefined && changed(podUid)) this.context.rejudge(entry.key);
    }
  }
}
