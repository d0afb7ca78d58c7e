import { createRegistry, hasCode, type LeaderInfo, type Member, type Registry, type RegistryError } from '@rollcall/core';
import { parseKey, type RecordStore, type StoredRecord, type WatchSubscription, registryStore } from '@rollcall/core/spi';
import { resolveCliConfig, type ConfigFlags } from '../config.js';
import { ExitCode } from '../errors.js';
import { compactJson, outputFormat } from '../output.js';

export interface WatchFlags extends ConfigFlags {
  output?: string;
  json?: boolean;
}

type Event = { kind: 'member'; type: 'added' | 'updated' | 'removed'; role: string; id: string; payload: unknown; reason?: string }
  | { kind: 'election'; type: 'leader' | 'no-leader'; election: string; leader: string | null; fencingToken: number | null; previous?: string | null }
  | { kind: 'lock'; type: 'acquired' | 'released' | 'expired' | 'deleted'; lock: string; holder: string | null; fencingToken: number | null }
  | { kind: 'connection'; type: string };

function text(e: Event): string {
  switch (e.kind) {
    case 'member':
      return `member    ${e.type.padEnd(8)} ${e.role}/${e.id}  ${compactJson(e.payload)}${e.reason ? `  (${e.reason})` : ''}`;
    case 'election':
      return e.type === 'leader' ? `election  leader   ${e.election}  ${e.leader}  fencing token ${e.fencingToken}` : `election  none     ${e.election}  no leader${e.previous ? ` (was ${e.previous})` : ''}`;
    case 'lock':
      return `lock      ${e.type.padEnd(8)} ${e.lock}  ${e.holder ?? '(none)'}  fencing token ${e.fencingToken}`;
    case 'connection':
      return `connection ${e.type}`;
  }
}

/**
 * Follows every record of the store from a snapshot (list, then watch from its
 * revision), resuming after a broken watch and relisting when the revision is
 * too old; reports each key's change as (previous, next).
 */
class RecordFollower {
  private readonly state = new Map<string, StoredRecord>();
  private revision = '';
  private sub: WatchSubscription | undefined;
  private retry: NodeJS.Timeout | undefined;
  private delayMs = 250;
  private closed = false;

  constructor(
    private readonly store: RecordStore,
    private readonly onChange: (key: string, previous: StoredRecord | undefined, next: StoredRecord | undefined) => void,
  ) {}

  async start(): Promise<void> {
    await this.relist();
  }

  private async relist(): Promise<void> {
    const list = await this.store.list('');
    const seen = new Set<string>();
    for (const record of list.records) {
      seen.add(record.key);
      const previous = this.state.get(record.key);
      this.state.set(record.key, record);
      if (previous?.version !== record.version) this.onChange(record.key, previous, record);
    }
    for (const [key, previous] of [...this.state]) {
      if (!seen.has(key)) {
        this.state.delete(key);
        this.onChange(key, previous, undefined);
      }
    }
    this.revision = list.revision;
    this.watch();
  }

  private watch(): void {
    if (this.closed) return;
    this.sub = this.store.watch('', this.revision, {
      event: (e) => {
        this.delayMs = 250;
        this.revision = e.revision;
        if (e.type === 'put') {
          const previous = this.state.get(e.record.key);
          this.state.set(e.record.key, e.record);
          this.onChange(e.record.key, previous, e.record);
        } else if (e.type === 'delete') {
          const previous = this.state.get(e.key);
          this.state.delete(e.key);
          if (previous) this.onChange(e.key, previous, undefined);
        }
      },
      error: (err: RegistryError) => {
        this.sub = undefined;
        if (this.closed) return;
        const again = hasCode(err, 'REVISION_TOO_OLD') ? () => this.relist().catch(() => this.schedule(() => this.relist())) : () => this.watch();
        this.schedule(again);
      },
    });
  }

  private schedule(fn: () => unknown): void {
    if (this.closed) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void Promise.resolve(fn()).catch(() => this.schedule(fn));
    }, this.delayMs);
    this.delayMs = Math.min(this.delayMs * 2, 5000);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.sub?.close();
  }
}

const memberEvent = (type: 'added' | 'updated' | 'removed', m: Member, reason?: string): Event => ({ kind: 'member', type, role: m.role, id: m.id, payload: m.payload ?? null, ...(reason ? { reason } : {}) });
const leaderEvent = (election: string, leader: LeaderInfo | undefined, previous?: LeaderInfo): Event =>
  leader ? { kind: 'election', type: 'leader', election, leader: leader.identity, fencingToken: leader.fencingToken } : { kind: 'election', type: 'no-leader', election, leader: null, fencingToken: null, previous: previous?.identity ?? null };

/**
 * `rollcall watch`: the current members, leaders and locks, then every change,
 * until Ctrl-C. Members and leaders come from the Registry API (so expiry is
 * judged as the library judges it); locks from the store's watch.
 */
export async function watchCommand(flags: WatchFlags): Promise<number> {
  const format = outputFormat(flags);
  const config = await resolveCliConfig(flags);
  const registry: Registry = await createRegistry(config.flat as never);
  const emit = (e: Event) => {
    if (format === 'json') process.stdout.write(JSON.stringify({ time: new Date().toISOString(), ...e }) + '\n');
    else process.stdout.write(`${new Date().toISOString().slice(11, 23)}  ${text(e)}\n`);
  };
  const shown = new Set<string>();
  registry.on('memberAdded', ({ member }) => (shown.add(`${member.role}/${member.id}`), emit(memberEvent('added', member))));
  registry.on('memberUpdated', ({ member }) => emit(memberEvent('updated', member)));
  registry.on('memberRemoved', ({ member, reason }) => emit(memberEvent('removed', member, reason)));
  for (const type of ['suspended', 'lost', 'reconnected'] as const) registry.on(type, () => emit({ kind: 'connection', type }));

  const observers = new Map<string, () => void>();
  const lockTimers = new Map<string, NodeJS.Timeout>();
  const follower = new RecordFollower(registryStore(registry), (key, previous, next) => {
    const parsed = parseKey(key);
    if (!parsed) return;
    // Members come from the Registry API, which judges their expiry.
    if (parsed.kind === 'member') return;
    if (parsed.kind === 'election' && next && !observers.has(parsed.name)) {
      const observer = registry.observe(parsed.name);
      emit(leaderEvent(parsed.name, observer.leader));
      const off = observer.on('changed', ({ leader, previous: was }) => emit(leaderEvent(parsed.name, leader, was)));
      observers.set(parsed.name, () => (off(), observer.close()));
      return;
    }
    if (parsed.kind !== 'lock') return;
    const name = parsed.name;
    clearTimeout(lockTimers.get(name));
    if (!next) {
      emit({ kind: 'lock', type: 'deleted', lock: name, holder: null, fencingToken: previous?.record.leaseTransitions ?? null });
      return;
    }
    const r = next.record;
    if (r.holderIdentity === '') {
      if (previous && previous.record.holderIdentity !== '') emit({ kind: 'lock', type: 'released', lock: name, holder: null, fencingToken: r.leaseTransitions });
      return;
    }
    if (!previous || previous.record.holderIdentity !== r.holderIdentity || previous.record.leaseTransitions !== r.leaseTransitions) {
      emit({ kind: 'lock', type: 'acquired', lock: name, holder: r.holderIdentity, fencingToken: r.leaseTransitions });
    }
    // A holder that stops renewing: by this process's clock, as the library judges expiry.
    const timer = setTimeout(() => emit({ kind: 'lock', type: 'expired', lock: name, holder: r.holderIdentity, fencingToken: r.leaseTransitions }), r.leaseDurationSeconds * 1000 + 1);
    timer.unref();
    lockTimers.set(name, timer);
  });

  const roles = new Set((await registryStore(registry).list('member/')).records.map((r) => parseKey(r.key)?.role).filter((r): r is string => !!r));
  // A member that joined while this listed has been shown by its event already.
  for (const role of [...roles].sort()) for (const m of await registry.members(role)) if (!shown.has(`${m.role}/${m.id}`)) emit(memberEvent('added', m));
  await follower.start();
  process.stderr.write(`rollcall: watching cluster ${config.resolved.cluster} on ${registry.backend}; Ctrl-C to stop\n`);

  return new Promise<number>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      follower.close();
      observers.forEach((close) => close());
      lockTimers.forEach((t) => clearTimeout(t));
      void registry.close().finally(() => resolve(ExitCode.INTERRUPTED));
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
