import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigurationError, createRegistry, ErrorCode, PermissionError, UnavailableError, type Registry } from '../src/index.js';
import type { PodReadinessSource, PodReadinessWatch, SelfProbeAnswer } from '../src/pod-readiness.js';
import { memberKey, type PodMemberListing, type RecordList, type StoreSupports } from '../src/spi.js';
import { MemoryStore, type MemoryBackend } from '../src/testing.js';
import { Harness, memberLog, until } from './harness.js';

// Defaults: heartbeat every 5 s, member lease 20 s.
const LEASE = 20_000;
const INTERVAL = 5_000;
const pod = { member: { liveness: 'pod' as const } };

/**
 * The pods of a namespace as a readiness source shows them: for each role, the
 * pods its Service selects and whether each is Ready (what the endpoints
 * controller publishes). Changes reach watchers asynchronously, as a watch's do.
 */
class FakePods {
  private readonly served = new Map<string, Map<string, boolean>>();
  private readonly watchers = new Set<{ role: string; changed: (ready: ReadonlySet<string>) => void }>();
  /** How many role watches were opened, by role: one per role a process reads. */
  readonly opened = new Map<string, number>();
  /** Listeners of each pod's own probe answers (`onSelfProbe`). */
  private readonly probeListeners = new Map<string, Set<(answer: SelfProbeAnswer) => void>>();

  /** Pod `uid`'s own readiness probe served a Ready answer at `at` (what serveReadinessProbe reports). */
  probeAnswered(uid: string, at: number, notReadyAfterMs: number): void {
    for (const listener of this.probeListeners.get(uid) ?? []) listener({ at, notReadyAfterMs });
  }

  /** Puts pod `uid` behind `role`'s Service, Ready or not; undefined takes it out (the pod deleted). */
  set(role: string, uid: string, ready: boolean | undefined): void {
    let pods = this.served.get(role);
    if (!pods) this.served.set(role, (pods = new Map()));
    if (ready === undefined) pods.delete(uid);
    else pods.set(uid, ready);
    const now = this.ready(role);
    for (const w of this.watchers) if (w.role === role) void Promise.resolve().then(() => w.changed(now));
  }

  private ready(role: string): Set<string> {
    return new Set([...(this.served.get(role) ?? [])].filter(([, ready]) => ready).map(([uid]) => uid));
  }

  source(podUid: string | undefined): PodReadinessSource {
    return {
      podUid,
      assertServed: async (role) => {
        if (podUid === undefined || !this.served.get(role)?.has(podUid)) throw new ConfigurationError(`pod ${podUid} is not behind the Service of role ${role}`);
      },
      watchRole: (role, changed): PodReadinessWatch => {
        this.opened.set(role, (this.opened.get(role) ?? 0) + 1);
        const watcher = { role, changed };
        this.watchers.add(watcher);
        const listed = Promise.resolve().then(() => changed(this.ready(role)));
        return { listed, close: () => this.watchers.delete(watcher) };
      },
      onSelfProbe: (listener) => {
        if (podUid === undefined) return () => {};
        let set = this.probeListeners.get(podUid);
        if (!set) this.probeListeners.set(podUid, (set = new Set()));
        set.add(listener);
        return () => set.delete(listener);
      },
    };
  }
}

/**
 * A readiness source whose reads are refused (PERMISSION_DENIED: an identity
 * without get/list/watch on EndpointSlices), until `grant()`: then its watches
 * list, as the Kubernetes source's retries do once the permission is granted.
 */
class RefusingSource implements PodReadinessSource {
  private granted = false;
  private readonly waiting: (() => void)[] = [];
  readonly podUid = undefined;

  constructor(
    private readonly inner: PodReadinessSource,
    private readonly refusal: () => Error = () => new PermissionError('PERMISSION_DENIED', 'cannot list endpointslices.discovery.k8s.io'),
  ) {}

  assertServed(role: string): Promise<void> {
    return this.inner.assertServed(role);
  }

  watchRole(role: string, changed: (ready: ReadonlySet<string>) => void): PodReadinessWatch {
    if (this.granted) return this.inner.watchRole(role, changed);
    let watch: PodReadinessWatch | undefined;
    let closed = false;
    this.waiting.push(() => {
      if (!closed) watch = this.inner.watchRole(role, changed);
    });
    const listed = Promise.reject(this.refusal());
    listed.catch(() => {});
    return { listed, close: () => ((closed = true), watch?.close()) };
  }

  grant(): void {
    this.granted = true;
    this.waiting.splice(0).forEach((start) => start());
  }
}

/** A memory store that offers pod readiness, as the Kubernetes store does. */
class PodStore extends MemoryStore {
  override readonly supports: StoreSupports = { syncedProgress: true, podReadiness: true };

  constructor(
    backend: MemoryBackend,
    readonly podReadiness: PodReadinessSource,
  ) {
    super({ backend, cluster: 'test' });
  }
}

/** A pod store that also lists one pod's members of a role (as the Kubernetes store does by label), counting both kinds of list of a role. */
class PodListingStore extends PodStore implements PodMemberListing {
  override readonly supports: StoreSupports = { syncedProgress: true, podReadiness: true, podMemberListing: true };
  readonly podMembers: PodMemberListing = this;
  roleLists = 0;
  podLists = 0;

  override async list(prefix: string): Promise<RecordList> {
    if (prefix.startsWith('member/')) this.roleLists++;
    return super.list(prefix);
  }

  async listPodMembers(role: string, podUid: string): Promise<RecordList> {
    this.podLists++;
    const all = await MemoryStore.prototype.list.call(this, memberKey(role, ''));
    return { ...all, records: all.records.filter((r) => r.record.liveness?.mode === 'pod' && r.record.liveness.podUid === podUid) };
  }
}

describe('registry.member.liveness=pod', () => {
  let h: Harness;
  let pods: FakePods;
  beforeEach(() => {
    h = new Harness();
    pods = new FakePods();
  });
  const closing: Registry[] = [];
  afterEach(async () => {
    await Promise.all(closing.splice(0).map((r) => r.close()));
    await h.closeAll();
  });

  const open = (identity: string, podUid: string | undefined, config: object = pod) => h.registry(identity, config, h.clock, new PodStore(h.backend, pods.source(podUid)));
  const row = (role: string, id: string) => h.backend.rows.get(`test/${memberKey(role, id)}`);

  it('a member in a Ready pod is written once and never renewed; readers follow its pod: not Ready removes it (expired, last data), Ready again adds it, deleted removes it', async () => {
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a');
    const r = await open('r', undefined);
    const seen = memberLog(r.registry, 'worker');
    await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    await until(() => seen.events.length === 1);
    expect(row('worker', 'w1')!.record).toMatchObject({ liveness: { mode: 'pod', podUid: 'uid-a' } });
    const written = row('worker', 'w1')!.version;
    await h.clock.advance(5 * LEASE);
    expect(row('worker', 'w1')!.version).toBe(written);
    expect(seen.summary()).toEqual(['added w1']);

    pods.set('worker', 'uid-a', false);
    await until(() => seen.events.length === 2);
    expect(seen.events[1]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w1', payload: { n: 1 } } });
    expect(await r.registry.members('worker')).toEqual([]);
    expect(row('worker', 'w1')).toBeDefined(); // readers delete nothing: it may turn Ready again

    pods.set('worker', 'uid-a', true);
    await until(() => seen.events.length === 3);
    pods.set('worker', 'uid-a', undefined);
    await until(() => seen.events.length === 4);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 expired', 'added w1', 'removed w1 expired']);
    expect(pods.opened.get('worker')).toBe(1); // one watch per role read, not per member
  });

  it("with its own readiness probe answering, a pod member is lost (probe-missed) once the kubelet may have marked its pod not Ready with no answer since — read on access after a pause, before its peers can see the pod not Ready", async () => {
    const NOT_READY_AFTER = 1_800; // periodSeconds 1, failureThreshold 1, timeoutSeconds 1, less a tenth
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a', { member: { liveness: 'pod', afterLost: 'reannounce' } });
    const r = await open('r', undefined);
    const seen = memberLog(r.registry, 'worker', h.clock);
    const handle = await a.registry.announce({ role: 'worker', id: 'w1' });
    const lost: { reason: string; at: number }[] = [];
    handle.on('lost', (e) => lost.push({ reason: e.reason, at: h.clock.now() }));
    await until(() => seen.events.length === 1);
    // answered every second for a minute: alive throughout
    for (let t = 0; t < 60; t++) {
      pods.probeAnswered('uid-a', h.clock.now(), NOT_READY_AFTER);
      await h.clock.advance(1_000);
      expect(handle.alive, `second ${t}`).toBe(true);
    }
    pods.probeAnswered('uid-a', h.clock.now(), NOT_READY_AFTER);
    const lastAnswer = h.clock.now();
    h.clock.jump(5_000); // SIGSTOP for 5 s: no timer ran, no answer was served
    expect(handle.alive).toBe(false); // read on access, before any timer
    expect(handle.signal.aborted).toBe(false); // the timer announces
    pods.set('worker', 'uid-a', false); // meanwhile the kubelet marked the pod not Ready, after lastAnswer + NOT_READY_AFTER
    await h.clock.advance(0);
    expect(lost).toEqual([{ reason: 'probe-missed', at: lastAnswer + 5_000 }]);
    await until(() => seen.events.length === 2);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 expired']);
    expect(seen.at[1]).toBeGreaterThanOrEqual(lost[0]!.at);
  });

  it('a probe answer served after the bound passed (the kubelet probe in flight at SIGCONT) does not revive the incarnation: lost once, at the resume', async () => {
    const NOT_READY_AFTER = 1_800;
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a', { member: { liveness: 'pod', afterLost: 'reannounce' } });
    const handle = await a.registry.announce({ role: 'worker', id: 'w1' });
    const first = handle.incarnation;
    const firstSignal = handle.signal;
    const lost: { reason: string; at: number; incarnation: string }[] = [];
    handle.on('lost', (e) => lost.push({ reason: e.reason, at: h.clock.now(), incarnation: e.incarnation }));
    pods.probeAnswered('uid-a', h.clock.now(), NOT_READY_AFTER);
    const lastAnswer = h.clock.now();
    h.clock.jump(5_000); // SIGSTOP for 5 s: the overdue timer has not run yet
    expect(handle.alive).toBe(false);
    // resumed: the probe request the kubelet sent meanwhile is answered before the overdue timer runs
    pods.probeAnswered('uid-a', h.clock.now(), NOT_READY_AFTER);
    expect(handle.alive, 'an answer past the bound vouches for nothing').toBe(false);
    expect(handle.incarnation).toBe(first);
    await h.clock.advance(0);
    expect(lost).toEqual([{ reason: 'probe-missed', at: lastAnswer + 5_000, incarnation: first! }]);
    expect(firstSignal.aborted).toBe(true);
    await until(() => handle.incarnation !== first);
  });

  it('a pod member whose probe has not answered yet has no probe bound; one that answered and then stops being answered is lost once, at the last answer plus the window', async () => {
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a', { member: { liveness: 'pod', afterLost: 'reannounce' } });
    const handle = await a.registry.announce({ role: 'worker', id: 'w1' });
    const lost: { reason: string; at: number }[] = [];
    handle.on('lost', (e) => lost.push({ reason: e.reason, at: h.clock.now() }));
    await h.clock.advance(10 * LEASE); // no probe attached yet (the kubelet probes only once the container runs)
    expect(handle.alive).toBe(true);
    pods.probeAnswered('uid-a', h.clock.now(), 2_000);
    const at = h.clock.now();
    await h.clock.advance(1_999);
    expect(lost).toEqual([]);
    await h.clock.advance(1);
    expect(lost).toEqual([{ reason: 'probe-missed', at: at + 2_000 }]);
  });

  it('with member.podRenewDeadlineMs, a pod member reads (never writes) its record each interval and, cut off from the backend, is lost at the send of its last good read plus the deadline, before any pod state could remove it; found deleted, lost at once', async () => {
    const DEADLINE = 15_000;
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a', { member: { liveness: 'pod', podRenewDeadlineMs: DEADLINE } });
    const handle = await a.registry.announce({ role: 'worker', id: 'w1' });
    const lost: { reason: string; at: number }[] = [];
    handle.on('lost', (e) => lost.push({ reason: e.reason, at: h.clock.now() }));
    const written = row('worker', 'w1')!.version;
    const first = handle.incarnation;
    await h.clock.advance(3 * LEASE);
    expect(handle.alive).toBe(true);
    expect(row('worker', 'w1')!.version).toBe(written); // reads only
    const lastRead = h.clock.now(); // a read was sent at 60000
    a.store.partition();
    await h.clock.advance(DEADLINE - 1);
    expect(handle.alive).toBe(true);
    await h.clock.advance(1);
    expect(lost).toEqual([{ reason: 'renew-deadline', at: lastRead + DEADLINE }]);
    expect(handle.alive).toBe(false);
    a.store.heal();
    await h.clock.advanceUntil(() => handle.alive, 2 * INTERVAL);
    expect(String(row('worker', 'w1')!.createRevision)).toBe(handle.incarnation); // a new incarnation, a new record
    expect(handle.incarnation).not.toBe(first);
    // An operator deletes it: the next read finds it gone.
    const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
    await raw.delete(memberKey('worker', 'w1'), (await raw.get(memberKey('worker', 'w1')))!.version);
    await h.clock.advanceUntil(() => lost.length === 2, INTERVAL);
    expect(lost[1]!.reason).toBe('deleted');
  });

  it('without member.podRenewDeadlineMs (default 0), a pod member has no deadline of its own: cut off for three leases, still alive; the deadline refused at or above 40000 or at or below 1.2 heartbeats, naming the key', async () => {
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a');
    const handle = await a.registry.announce({ role: 'worker', id: 'w1' });
    a.store.partition();
    await h.clock.advance(3 * LEASE);
    expect(handle.alive).toBe(true);
    a.store.heal();
    for (const podRenewDeadlineMs of [40_000, 6_000]) {
      await expect(open('b', 'uid-a', { member: { liveness: 'pod', podRenewDeadlineMs } })).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.member.podRenewDeadlineMs' });
    }
  });

  it('a restarted container\'s announce deletes what the earlier container of its pod announced, so the pod\'s next Ready brings back no phantom', async () => {
    pods.set('worker', 'uid-a', true);
    const first = await open('first', 'uid-a');
    const r = await open('r', undefined);
    const seen = memberLog(r.registry, 'worker');
    await first.registry.announce({ role: 'worker', id: 'w-first' });
    await until(() => seen.events.length === 1);
    first.store.partition(); // the container dies: no withdraw
    pods.set('worker', 'uid-a', false);
    await until(() => seen.events.length === 2);
    await h.clock.advance(1000);
    const second = await open('second', 'uid-a'); // the kubelet restarts it: a new process, a new member id
    await second.registry.announce({ role: 'worker', id: 'w-second' });
    expect(row('worker', 'w-first')).toBeUndefined();
    pods.set('worker', 'uid-a', true);
    await until(() => seen.events.length === 3);
    await h.clock.advance(LEASE);
    expect(seen.summary()).toEqual(['added w-first', 'removed w-first expired', 'added w-second']);
  });

  it('with the store\'s list of one pod\'s members (PodMemberListing), the announce of a restarted container never lists its whole role', async () => {
    pods.set('worker', 'uid-a', true);
    const first = await open('first', 'uid-a');
    await first.registry.announce({ role: 'worker', id: 'w-first' });
    for (const id of ['w-x', 'w-y']) await (await open(id, undefined)).registry.announce({ role: 'worker', id }); // the rest of the role
    first.store.partition(); // the container dies: no withdraw
    await h.clock.advance(1000);
    const store = new PodListingStore(h.backend, pods.source('uid-a'));
    const second = await h.registry('second', pod, h.clock, store);
    await second.registry.announce({ role: 'worker', id: 'w-second' });
    expect(row('worker', 'w-first')).toBeUndefined();
    expect(row('worker', 'w-x')).toBeDefined();
    expect({ roleLists: store.roleLists, podLists: store.podLists }).toEqual({ roleLists: 0, podLists: 1 });
  });

  it('a payload change is one write, and readers see it as updated', async () => {
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a');
    const r = await open('r', undefined);
    const seen = memberLog(r.registry, 'worker');
    const m = await a.registry.announce({ role: 'worker', id: 'w1', payload: 1 });
    await until(() => seen.events.length === 1);
    const before = row('worker', 'w1')!.version;
    await m.update(2);
    await until(() => seen.events.length === 2);
    expect(seen.summary()).toEqual(['added w1', 'updated w1']);
    expect(Number(row('worker', 'w1')!.version)).toBeGreaterThan(Number(before));
    await m.withdraw();
    await until(() => seen.events.length === 3);
    expect(seen.summary()[2]).toBe('removed w1 deleted');
  });

  it('an update written just before its withdraw: while the pod is not Ready yet the member is in no view, nor its update, and the next Ready adds what was announced again; while Ready, updated then removed (deleted)', async () => {
    // The soak's first fault (CI, c2#1) raced an update and a withdraw before any pod was Ready: no watcher could see it.
    pods.set('worker', 'uid-a', false);
    const a = await open('a', 'uid-a');
    const r = await open('r', undefined);
    const seen = memberLog(r.registry, 'worker');
    let m = await a.registry.announce({ role: 'worker', id: 'w1', payload: { seq: 0 } });
    // The race's `written` outcome: the update landed before the withdraw's mark.
    await m.update({ seq: 1 });
    await m.withdraw();
    m = await a.registry.announce({ role: 'worker', id: 'w1', payload: { seq: 2 } });
    expect(await r.registry.members('worker')).toEqual([]);
    pods.set('worker', 'uid-a', true);
    await until(() => seen.events.length === 1);
    expect(seen.events.map((e) => [e.type, e.member.payload])).toEqual([['added', { seq: 2 }]]);

    await m.update({ seq: 3 });
    await m.withdraw();
    await until(() => seen.events.length === 3);
    expect(seen.events.slice(1).map((e) => [e.type, e.member.payload, e.type === 'removed' ? e.reason : undefined])).toEqual([
      ['updated', { seq: 3 }, undefined],
      ['removed', { seq: 3 }, 'deleted'],
    ]);
  });

  it('the first members() of a role waits for its readiness: a Ready pod member is in the first answer', async () => {
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a');
    await a.registry.announce({ role: 'worker', id: 'w1' });
    const r = await open('r', undefined);
    expect((await r.registry.members('worker')).map((m) => m.id)).toEqual(['w1']);
  });

  it('announce fails INVALID_CONFIG, writing nothing, when its pod is not behind the role Service', async () => {
    const a = await open('a', 'uid-a');
    await expect(a.registry.announce({ role: 'worker', id: 'w1' })).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG, message: expect.stringContaining('Service of role worker') });
    expect(row('worker', 'w1')).toBeUndefined();
  });

  it('a backend without pod readiness refuses the mode with INVALID_CONFIG', async () => {
    await expect(h.registry('a', pod)).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG, message: expect.stringContaining('registry.member.liveness=pod') });
  });

  it('a member outside a pod keeps heartbeats, and readers judge its lease', async () => {
    const a = await open('a', undefined);
    const r = await open('r', undefined);
    const seen = memberLog(r.registry, 'worker');
    await a.registry.announce({ role: 'worker', id: 'w1' });
    expect(row('worker', 'w1')!.record).toMatchObject({ liveness: { mode: 'heartbeat' } });
    const first = row('worker', 'w1')!.version;
    await h.clock.advance(INTERVAL);
    expect(row('worker', 'w1')!.version).not.toBe(first);
    a.store.partition(); // a crash, as its readers see it
    await h.clock.advance(LEASE + INTERVAL);
    await until(() => seen.events.length === 2);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 expired']);
  });

  it('readers of every mode judge a pod member by its pod, not by a lease: heartbeat and reaper readers keep it while its pod is Ready and report it removed (expired) when it is not', async () => {
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a');
    const hb = await open('hb', undefined, {});
    const rp = await open('rp', undefined, { member: { liveness: 'reaper' } });
    const hbSeen = memberLog(hb.registry, 'worker');
    const rpSeen = memberLog(rp.registry, 'worker');
    await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    await until(() => hbSeen.events.length === 1 && rpSeen.events.length === 1);
    await h.clock.advance(5 * LEASE);
    expect(row('worker', 'w1')).toBeDefined();
    expect(hbSeen.summary()).toEqual(['added w1']);
    expect(rpSeen.summary()).toEqual(['added w1']);
    expect((await hb.registry.members('worker'))[0]).toMatchObject({ id: 'w1', judgedBy: 'pod' });
    // Its container exits and does not come back: the pod stays, not Ready.
    pods.set('worker', 'uid-a', false);
    await until(() => hbSeen.events.length === 2 && rpSeen.events.length === 2);
    expect(hbSeen.events[1]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w1', payload: { n: 1 } } });
    expect(rpSeen.summary()).toEqual(['added w1', 'removed w1 expired']);
    expect(row('worker', 'w1')).toBeDefined(); // readers delete nothing
  });

  it('a reader that may not read pod readiness (PERMISSION_DENIED) shows pod members while their records exist, marked unverified, and judges them by their pod once it may', async () => {
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a');
    await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    const refusing = new RefusingSource(pods.source(undefined));
    const logs: string[] = [];
    const logger = { debug: () => {}, info: () => {}, warn: (...args: unknown[]) => void logs.push(String(args.at(-1))), error: () => {} };
    const viewer = { registry: await createRegistry({ type: 'memory', identity: 'viewer', readOnly: true }, { store: new PodStore(h.backend, refusing), clock: h.clock, logger }) };
    closing.push(viewer.registry);
    const seen = memberLog(viewer.registry, 'worker');
    expect(await viewer.registry.members('worker')).toMatchObject([{ id: 'w1', judgedBy: 'unverified', payload: { n: 1 } }]);
    await until(() => seen.events.length === 1);
    expect(logs.filter((m) => m.includes('may not read pod readiness'))).toHaveLength(1);
    // Not Ready, but this reader cannot know: it still shows the member, and says so.
    pods.set('worker', 'uid-a', false);
    await h.clock.advance(5 * LEASE);
    expect(seen.summary()).toEqual(['added w1']);
    // Granted: the judgement by its pod takes over.
    refusing.grant();
    await until(() => seen.events.length === 2);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 expired']);
    pods.set('worker', 'uid-a', true);
    await until(() => seen.events.length === 3);
    expect((await viewer.registry.members('worker'))[0]).toMatchObject({ id: 'w1', judgedBy: 'pod' });
    // The record deleted (its pod deleted, or withdrawn): removed.
    await a.registry.close();
    await until(() => seen.events.length === 4);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 expired', 'added w1', 'removed w1 deleted']);
  });

  it('a reader on a backend without pod readiness shows pod members unverified, while their records exist', async () => {
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a');
    await a.registry.announce({ role: 'worker', id: 'w1' });
    const plain = await h.registry('plain', {});
    expect(await plain.registry.members('worker')).toMatchObject([{ id: 'w1', judgedBy: 'unverified' }]);
    await h.clock.advance(5 * LEASE); // never expired by a lease
    expect(await plain.registry.members('worker')).toMatchObject([{ id: 'w1' }]);
  });

  it('a first readiness list that fails otherwise (UNAVAILABLE) rejects the first members() of the role, and hides its pod members until it lists', async () => {
    pods.set('worker', 'uid-a', true);
    const a = await open('a', 'uid-a');
    await a.registry.announce({ role: 'worker', id: 'w1' });
    const down = new RefusingSource(pods.source(undefined), () => new UnavailableError('endpointslices: connection refused'));
    const r = await h.registry('r', {}, h.clock, new PodStore(h.backend, down));
    await expect(r.registry.members('worker')).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE });
    const seen = memberLog(r.registry, 'worker');
    expect(seen.events).toEqual([]);
    down.grant();
    await until(() => seen.events.length === 1);
    expect((await r.registry.members('worker'))[0]).toMatchObject({ id: 'w1', judgedBy: 'pod' });
  });

  it('a rolling switch from heartbeat to pod loses no member: each pod replaced in turn, readers of both modes see only the withdrawals', async () => {
    const names = ['p0', 'p1', 'p2'];
    // The heartbeat cluster: each pod a member and a reader of the role.
    const old = await Promise.all(names.map((n) => open(`${n}-old`, `uid-${n}-old`, {})));
    for (const [i, n] of names.entries()) await old[i]!.registry.announce({ role: 'worker', id: `${n}-old` });
    const watcher = await open('watcher', undefined, {}); // a heartbeat reader that stays for the whole switch
    const watched = memberLog(watcher.registry, 'worker');
    const logs = old.map((o) => memberLog(o.registry, 'worker'));
    await until(() => watched.events.length === 3);
    for (const [i, n] of names.entries()) {
      // A rolling update: the new pod starts (pod mode) and announces; the old one is stopped (it withdraws).
      pods.set('worker', `uid-${n}-new`, true);
      const next = await open(`${n}-new`, `uid-${n}-new`);
      logs.push(memberLog(next.registry, 'worker'));
      await next.registry.announce({ role: 'worker', id: `${n}-new` });
      await h.clock.advance(LEASE); // long enough for any reader that would expire the pod member to do it
      await old[i]!.registry.close();
      await h.clock.advance(2 * LEASE);
    }
    await until(() => watched.events.length === 9);
    const after = (await watcher.registry.members('worker')).map((m) => m.id);
    expect(after).toEqual(names.map((n) => `${n}-new`));
    for (const n of names) expect(row('worker', `${n}-new`)!.record).toMatchObject({ liveness: { mode: 'pod', podUid: `uid-${n}-new` } });
    // Every removal any process saw was a withdrawal of an old member, never an expiry.
    const removals = [watched, ...logs].flatMap((l) => l.events.filter((e) => e.type === 'removed'));
    expect(removals.every((e) => e.type === 'removed' && e.reason === 'deleted' && e.member.id.endsWith('-old'))).toBe(true);
    expect(watched.summary().filter((s) => s.startsWith('removed'))).toEqual(names.map((n) => `removed ${n}-old deleted`));
  });
});
