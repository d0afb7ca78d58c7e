import { StoreConflictError, type Registry } from '@rollcall/core';
import { assertName, electionKey, lockKey, parseKey, type StoredRecord, registryStore } from '@rollcall/core/spi';
import type { ConfigFlags } from '../config.js';
import { withRegistry } from '../connect.js';
import { age, compactJson, outputFormat, printJson, since, table } from '../output.js';

export interface ListingFlags extends ConfigFlags {
  output?: string;
  json?: boolean;
}

/** Every role that has a member record. */
async function roles(registry: Registry): Promise<string[]> {
  const { records } = await registryStore(registry).list('member/');
  return [...new Set(records.map((r) => parseKey(r.key)?.role).filter((r): r is string => !!r))].sort();
}

/** `rollcall members [role]`: the members the registry sees, through `members(role)`. */
export async function membersCommand(role: string | undefined, flags: ListingFlags): Promise<void> {
  const format = outputFormat(flags);
  if (role !== undefined) assertName('role', role);
  await withRegistry(flags, async (registry, config) => {
    const names = role !== undefined ? [role] : await roles(registry);
    const members = (await Promise.all(names.map((r) => registry.members(r)))).flat();
    if (format === 'json') {
      printJson(
        members.map((m) => ({
          role: m.role,
          id: m.id,
          payload: m.payload ?? null,
          acquireTime: m.acquireTime?.toISOString() ?? null,
          renewTime: m.renewTime?.toISOString() ?? null,
          heartbeatAgeMs: since(m.renewTime) ?? null,
        })),
      );
      return;
    }
    if (members.length === 0) {
      process.stdout.write(`no members${role ? ` of role ${role}` : ''} in cluster ${config.resolved.cluster} (${registry.backend})\n`);
      return;
    }
    process.stdout.write(table(['role', 'id', 'heartbeat', 'up', 'payload'], members.map((m) => [m.role, m.id, age(since(m.renewTime)), age(since(m.acquireTime)), compactJson(m.payload)])) + '\n');
  });
}

interface LeaseRow {
  name: string;
  holder: string | null;
  fencingToken: number;
  acquireTime: string | null;
  renewTime: string | null;
  leaseDurationSeconds: number;
}

function leaseRow(name: string, stored: StoredRecord, holder: string | null): LeaseRow {
  const r = stored.record;
  return { name, holder, fencingToken: r.leaseTransitions, acquireTime: r.acquireTime, renewTime: r.renewTime, leaseDurationSeconds: r.leaseDurationSeconds };
}

function leaseTable(kind: string, rows: LeaseRow[], holderTitle: string): string {
  return table([kind, holderTitle, 'token', 'held for', 'renewed', 'lease'], rows.map((r) => [r.name, r.holder ?? '(none)', r.fencingToken, r.holder ? age(since(r.acquireTime)) : '-', age(since(r.renewTime)), `${r.leaseDurationSeconds}s`]));
}

/** `rollcall leader [election]`: the leader of one election through `observe()`, or of every election. */
export async function leaderCommand(election: string | undefined, flags: ListingFlags): Promise<void> {
  const format = outputFormat(flags);
  if (election !== undefined) assertName('election', election);
  await withRegistry(flags, async (registry, config) => {
    let rows: LeaseRow[];
    if (election !== undefined) {
      const stored = await registryStore(registry).get(electionKey(election));
      if (!stored) throw new StoreConflictError('NOT_FOUND', `no election ${election} in cluster ${config.resolved.cluster}`, { backend: registry.backend });
      const observer = registry.observe(election);
      const leader = observer.leader;
      observer.close();
      rows = [leaseRow(election, stored, leader?.identity ?? null)];
    } else {
      const { records } = await registryStore(registry).list('election/');
      rows = records
        .map((s) => ({ s, name: parseKey(s.key)?.name }))
        .filter((x): x is { s: StoredRecord; name: string } => !!x.name)
        .map(({ s, name }) => leaseRow(name, s, s.record.holderIdentity || null))
        .sort((a, b) => (a.name < b.name ? -1 : 1));
    }
    if (format === 'json') {
      printJson(election !== undefined ? rows[0] : rows);
      return;
    }
    if (rows.length === 0) {
      process.stdout.write(`no elections in cluster ${config.resolved.cluster} (${registry.backend})\n`);
      return;
    }
    process.stdout.write(leaseTable('election', rows, 'leader') + '\n');
  });
}

/** `rollcall locks`: every lock record of the cluster and who holds it. */
export async function locksCommand(flags: ListingFlags): Promise<void> {
  const format = outputFormat(flags);
  await withRegistry(flags, async (registry, config) => {
    const { records } = await registryStore(registry).list('lock/');
    const rows = records
      .map((s) => ({ s, name: parseKey(s.key)?.name }))
      .filter((x): x is { s: StoredRecord; name: string } => !!x.name && x.s.key === lockKey(x.name))
      .map(({ s, name }) => leaseRow(name, s, s.record.holderIdentity || null))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    if (format === 'json') {
      printJson(rows);
      return;
    }
    if (rows.length === 0) {
      process.stdout.write(`no locks in cluster ${config.resolved.cluster} (${registry.backend})\n`);
      return;
    }
    process.stdout.write(leaseTable('lock', rows, 'holder') + '\n');
  });
}
