import type { Action } from '../../../src/actions.js';
import type { Decision, DecideMemo, DecideSettings, Observed } from '../../../src/decide.js';
import { Expectations } from '../../../src/expectations.js';
import { podName } from '../../../src/pod-build.js';
import { FINALIZER, type Pod, TASK_ID_LABEL } from '../../../src/pod.js';
import { type TaskRecord, WRITE_TERM_ANNOTATION } from '../../../src/task-record.js';
import { InvariantLedger } from './invariants.js';
import { nextTransition, settle, TRANSITIONS } from './kubelet-model.js';
import { newPod, newRecord, RUNNER } from './objects.js';
import type { Rng } from './random.js';

/** decide, or a deliberately wrong variant of it. */
export type DecideFn = (o: Observed, now: number, settings: DecideSettings) => Decision;

export type { Invariant } from './invariants.js';

const CAPACITY = 2;
const T0 = Date.UTC(2026, 0, 1);
export const MODEL_SETTINGS: DecideSettings = { keepFailedPodsMs: 20_000, retainDoneMs: 600_000, expectationTtlMs: 30_000 };

type InformerEvent = { kind: 'record'; key: string; obj?: TaskRecord } | { kind: 'pod'; key: string; obj?: Pod };
const clone = <T>(o: T): T => JSON.parse(JSON.stringify(o)) as T;
const taskOf = (pod: Pod) => pod.metadata.labels?.[TASK_ID_LABEL] ?? '';

/** One runner term: its informer caches (fed with lag), and the memory a term keeps. */
class Runner {
  readonly records = new Map<string, TaskRecord>();
  readonly pods = new Map<string, Pod>();
  readonly inbox: InformerEvent[] = [];
  readonly memo = new Map<string, DecideMemo>();
  readonly wake = new Map<string, number>();
  readonly dirty = new Set<string>();
  readonly expectations = new Expectations();
  readonly delivery = new Map<string, 'pending' | 'acked'>();
  readonly events = new Map<string, string[]>();
  /** The resourceVersion of this term's last record write per task, until the informer shows it. */
  readonly written = new Map<string, string>();
  quotaPausedUntil = 0;
  constructor(readonly term: number) {}

  /** One informer event into the caches: the task it touches is synced again. */
  see(e: InformerEvent): void {
    if (e.kind === 'record') {
      if (e.obj) this.records.set(e.key, e.obj);
      else this.records.delete(e.key);
      if (!e.obj || e.obj.resourceVersion === this.written.get(e.key)) this.written.delete(e.key);
      return void this.dirty.add(e.key);
    }
    if (e.obj) this.pods.set(e.key, e.obj);
    else this.pods.delete(e.key);
    // a pod's change frees or takes a slot: every queued task is looked at again
    for (const id of this.records.keys()) this.dirty.add(id);
  }

  /** `onStatus` acknowledges deliveries in flight (each with probability `p`). */
  ack(rng: Rng, p = 0.5): void {
    for (const [key, state] of this.delivery) {
      if (state === 'pending' && rng.chance(p)) this.delivery.set(key, 'acked'), this.dirty.add(key.split('/')[0]!);
    }
  }

  /** The admission's pause is over: every queued task is tried again, once (the loop's "\0admit" key). */
  admitResumes(now: number): void {
    if (this.quotaPausedUntil === 0 || this.quotaPausedUntil > now) return;
    this.quotaPausedUntil = 0;
    for (const id of this.records.keys()) this.dirty.add(id);
  }
}

/**
 * A fake API server with resourceVersions and the server-side fence (a write
 * stamped with an older term than the term Lease's is refused; a delete is
 * judged by the stored object's stamp), a kubelet, and the leader's sync loop
 * around a `decide` under test: informer lag, uncertain creates, quota refusals,
 * cancels, resubmits, clock jumps, term changes and kills come from the seed.
 */
export class ClusterModel {
  now = T0;
  private rv = 0;
  private lease = 1;
  private readonly records = new Map<string, TaskRecord>();
  private readonly pods = new Map<string, Pod>();
  private runner = new Runner(1);
  private stale?: Runner;
  private faults = true;
  private submitted = 0;
  readonly log: string[] = [];
  readonly ledger = new InvariantLedger(() => `step ${this.log.length}: ${this.log.at(-1) ?? ''}`);
  /** How often each kind of event and answer happened: the coverage of a run. */
  readonly counts = new Map<string, number>();
  private count(what: string): void {
    this.counts.set(what, (this.counts.get(what) ?? 0) + 1);
  }

  constructor(private readonly rng: Rng, private readonly decideFn: DecideFn) {}

  private emit(event: InformerEvent): void {
    this.runner.inbox.push(clone(event));
  }

  private putRecord(r: TaskRecord): void {
    r.resourceVersion = String(++this.rv);
    this.records.set(r.body.task.taskId, r);
    this.emit({ kind: 'record', key: r.body.task.taskId, obj: r });
  }

  private putPod(p: Pod): void {
    p.metadata.resourceVersion = String(++this.rv);
    this.pods.set(p.metadata.name, p);
    this.emit({ kind: 'pod', key: p.metadata.name, obj: p });
  }

  private removePod(name: string): void {
    this.pods.delete(name);
    this.emit({ kind: 'pod', key: name });
  }

  // --- the world's events ---

  /** One random event; `steps` of them make a sequence. */
  step(): void {
    const r = this.rng;
    const roll = r.next();
    if (roll < 0.08 && this.submitted < 6) this.submit();
    else if (roll < 0.3) this.sync(r.chance(0.1) && this.stale ? this.stale : this.runner);
    else if (roll < 0.45) this.deliver(r.int(1, 4));
    else if (roll < 0.62) this.kubelet();
    else if (roll < 0.64) this.request('cancel');
    else if (roll < 0.69) this.request('resubmit');
    else if (roll < 0.75) this.runner.ack(this.rng);
    else if (roll < 0.78) this.storeLogs();
    else if (roll < 0.9) this.now += r.chance(0.1) ? r.int(-60_000, 200_000) : r.int(0, 3000); // a wall-clock jump (either way), or time passing
    else if (roll < 0.92) this.newTerm(r.chance(0.5));
    else this.syncDue();
  }

  private submit(): void {
    const id = `t${this.submitted++}`;
    const record = newRecord(id, this.submitted, this.now, this.rng);
    this.log.push(`submit ${id}`);
    this.putRecord(record);
  }

  /** A follower or the CLI patches a request annotation: unconditional and unfenced. */
  private request(kind: 'cancel' | 'resubmit'): void {
    const records = [...this.records.values()];
    if (records.length === 0) return;
    const rec = clone(this.rng.pick(records));
    if (kind === 'cancel') rec.cancelRequested = 'model';
    else if (rec.body.state !== 'queued') rec.submitRequested = { ...rec.body.task, attempt: (rec.body.task.attempt ?? 1) + 1 };
    else return;
    this.log.push(`${kind} requested ${rec.body.task.taskId}`);
    this.count(`request:${kind}`);
    this.putRecord(rec);
  }

  private kubelet(): void {
    const pods = [...this.pods.values()];
    if (pods.length === 0) return;
    const pod = clone(this.rng.pick(pods));
    if (pod.metadata.deletionTimestamp && !pod.metadata.finalizers?.length) {
      this.log.push(`gone ${pod.metadata.name}`);
      return this.removePod(pod.metadata.name);
    }
    const move = nextTransition(pod, this.now, this.rng);
    if (!move) return;
    TRANSITIONS[move]!(pod, this.now);
    this.log.push(`kubelet ${move} ${pod.metadata.name}`);
    this.count(`kubelet:${move}`);
    this.putPod(pod);
  }

  private deliver(n: number, runner = this.runner): void {
    for (const e of runner.inbox.splice(0, n)) runner.see(e);
  }

  private storeLogs(): void {
    for (const name of this.pods.keys()) if (this.rng.chance(0.5)) this.logsStored.add(name);
  }

  private readonly logsStored = new Set<string>();

  /** A new term: killed (its memory gone) or deposed while it keeps running a while; the new one lists afresh. */
  private newTerm(kill: boolean): void {
    this.lease++;
    this.log.push(`term ${this.lease}${kill ? ' (killed)' : ''}`);
    this.count(kill ? 'kill' : 'deposed');
    this.stale = kill ? undefined : this.runner;
    this.runner = new Runner(this.lease);
    for (const [id, r] of this.records) this.runner.records.set(id, clone(r)), this.runner.dirty.add(id);
    for (const [name, p] of this.pods) this.runner.pods.set(name, clone(p));
  }

  private syncDue(runner = this.runner): void {
    for (const [id, at] of runner.wake) if (at <= this.now) runner.dirty.add(id);
    runner.admitResumes(this.now);
    for (const id of [...runner.dirty]) this.syncTask(runner, id);
  }

  private sync(runner: Runner): void {
    const ids = [...runner.records.keys()];
    if (ids.length) this.syncTask(runner, this.rng.pick(ids));
  }

  // --- the leader's sync: decide, then each action as one conditional request ---

  private syncTask(runner: Runner, id: string): void {
    runner.dirty.delete(id);
    const record = runner.records.get(id);
    if (!record) return;
    const expected = runner.expectations.size;
    const pods = [...runner.pods.values()].filter((p) => taskOf(p) === id);
    const attempt = record.body.task.attempt ?? 1;
    const live = [...runner.pods.values()].filter((p) => taskOf(p) !== id && !p.metadata.deletionTimestamp && runner.records.get(taskOf(p))?.body.state === 'queued').length + runner.expectations.size;
    const current = podName(RUNNER, id, attempt);
    const o: Observed = {
      runner: RUNNER, term: runner.term, record, writeUnseen: runner.written.has(id), pods, expecting: runner.expectations.get(id, pods),
      admitted: live < CAPACITY && runner.quotaPausedUntil <= this.now, delivery: runner.delivery.get(`${id}/${attempt}`) ?? 'none',
      logsStored: (name) => this.logsStored.has(name), memo: runner.memo.get(id),
      ...(runner.events.has(current) ? { events: { podName: current, lines: runner.events.get(current)! } } : {}),
    };
    const d = this.decideFn(o, this.now, MODEL_SETTINGS);
    runner.memo.set(id, d.memo);
    if (d.wakeAt === undefined) runner.wake.delete(id);
    else runner.wake.set(id, d.wakeAt);
    for (const a of d.actions) {
      if (a.type === 'createPod') this.ledger.createDecided(o.record);
      this.apply(runner, o, a);
    }
    // an expectation settled frees a slot: the queued tasks are looked at again
    if (runner.expectations.size < expected) for (const other of runner.records.keys()) runner.dirty.add(other);
  }

  private fenced(runner: Runner): boolean {
    return runner.term < this.lease;
  }

  private apply(runner: Runner, o: Observed, a: Action): void {
    const id = o.record.body.task.taskId;
    runner.dirty.add(id); // every answer enqueues the task again
    if (a.type === 'publish' || a.type === 'followLogs') return;
    if (a.type === 'fetchEvents') return void runner.events.set(a.pod.metadata.name, ['Warning Failed: model event']);
    if (a.type === 'deliver') {
      this.ledger.delivered(id, a.status);
      return void runner.delivery.set(`${id}/${a.status.attempt}`, 'pending');
    }
    this.count(a.type === 'writeRecord' ? `write:${a.meaning}` : a.type);
    if (a.type === 'writeRecord' && a.body.state === 'finished') this.count(`end:${a.body.status?.reason}`);
    if (this.fenced(runner)) return void this.count('fenced'); // the server refuses a deposed term's writes (and its GETs do not matter)
    this.log.push(`apply ${a.type} ${id}`);
    switch (a.type) {
      case 'createPod': return this.create(runner, o, a.attempt);
      case 'resolveCreate': {
        const pod = this.pods.get(a.podName);
        if (pod) runner.pods.set(a.podName, clone(pod));
        else runner.expectations.forget(id);
        return;
      }
      case 'writeRecord': {
        const server = this.records.get(id);
        if (!server || server.resourceVersion !== o.record.resourceVersion) return void this.count('conflict'); // 409/404: the next sync reads again
        const next = clone(a.body);
        this.ledger.recordWritten(id, server.body, next);
        const written: TaskRecord = { ...clone(server), body: next, writeTerm: runner.term };
        if (a.clearRequests) delete written.cancelRequested, delete written.submitRequested;
        this.putRecord(written);
        return void runner.written.set(id, written.resourceVersion);
      }
      case 'deleteRecord': {
        const server = this.records.get(id);
        if (!server || server.resourceVersion !== o.record.resourceVersion || server.writeTerm !== this.lease) return;
        this.records.delete(id);
        return this.emit({ kind: 'record', key: id });
      }
      case 'releasePod':
      case 'deletePod': {
        const server = this.pods.get(a.pod.metadata.name);
        if (!server || server.metadata.resourceVersion !== a.pod.metadata.resourceVersion) return;
        if (a.type === 'deletePod' && server.metadata.annotations?.[WRITE_TERM_ANNOTATION] !== String(this.lease)) return; // the fence judges a delete by the stored stamp
        this.ledger.podLetGo(a.type, server, this.records.get(id));
        const next = clone(server);
        if (a.type === 'releasePod') {
          next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
          next.metadata.annotations = { ...next.metadata.annotations, [WRITE_TERM_ANNOTATION]: String(runner.term) };
        } else if (!next.metadata.deletionTimestamp) {
          next.metadata.deletionTimestamp = new Date(this.now + 30_000).toISOString();
          next.metadata.deletionGracePeriodSeconds = 30;
        }
        return this.putPod(next);
      }
    }
  }

  private create(runner: Runner, o: Observed, attempt: number): void {
    const id = o.record.body.task.taskId;
    const name = podName(RUNNER, id, attempt);
    if (this.faults && this.rng.chance(0.1)) {
      runner.quotaPausedUntil = this.now + 5000; // 403 exceeded quota: the admission pauses
      this.count('quota');
      return;
    }
    runner.expectations.expect(id, name, attempt, this.now);
    const uncertain = this.faults && this.rng.chance(0.15);
    if (uncertain) this.count('uncertain');
    if (uncertain && this.rng.chance(0.5)) return; // timed out before the server stored it: the expectation stays
    if (this.pods.has(name)) return; // 409 with the same spec: adopted
    this.ledger.podCreated(id, attempt, this.records.get(id));
    const pod = newPod(name, o.record, attempt, runner.term, this.now);
    this.putPod(pod); // when uncertain: stored, the answer lost; the informer or resolveCreate settles it
  }

  // --- quiescence ---

  /**
   * No more faults: the informer catches up, every pod ends, every status is
   * acknowledged and logged, and the clock moves only to the loop's own
   * wake-ups. Then every task must be decided and every pod let go.
   */
  quiesce(maxRounds = 400): void {
    this.faults = false;
    this.stale = undefined;
    const r = this.runner;
    for (let round = 0; round < maxRounds; round++) {
      this.deliver(r.inbox.length);
      let moved = false;
      for (const pod of [...this.pods.values()]) {
        if (pod.metadata.deletionTimestamp && !pod.metadata.finalizers?.length) {
          this.removePod(pod.metadata.name);
          moved = true;
          continue;
        }
        const move = settle(pod, this.now);
        if (!move) continue;
        const next = clone(pod);
        TRANSITIONS[move]!(next, this.now);
        this.putPod(next);
        moved = true;
      }
      for (const name of this.pods.keys()) this.logsStored.add(name);
      r.ack(this.rng, 1);
      r.admitResumes(this.now);
      if (moved || r.inbox.length || r.dirty.size) {
        this.deliver(r.inbox.length);
        for (const id of [...r.dirty]) this.syncTask(r, id);
        continue;
      }
      const due = [...r.wake.values(), r.quotaPausedUntil].filter((at) => at > this.now);
      if (due.length === 0) return this.ledger.quiet(this.records.values(), this.pods.values());
      this.now = Math.min(...due);
      for (const [id, at] of r.wake) if (at <= this.now) r.dirty.add(id);
    }
    this.ledger.violate('quiescent-decided', `no quiescence after ${maxRounds} rounds`);
  }
}

/** Runs one seeded sequence of `steps` events, then quiesces: the violations found. */
export function runSequence(rng: Rng, decideFn: DecideFn, steps: number): ClusterModel {
  const model = new ClusterModel(rng, decideFn);
  for (let i = 0; i < steps; i++) model.step();
  model.quiesce();
  return model;
}
