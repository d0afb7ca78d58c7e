import { type LeaseInfo, StoreConflictError } from '@rollcall/core';
import { assertName } from '@rollcall/core/admin';
import type { ConfigFlags } from '../config.js';
import { withRegistry } from '../connect.js';
import { age, compactJson, outputFormat, printJson, since, table } from '../output.js';

export interface ListingFlags extends ConfigFlags {
  output?: string;
  json?: boolean;
}

/** `rollcall members [role]`: the members the registry sees, through `members(role)`. */
export async function membersCommand(role: string | undefined, flags: ListingFlags): Promise<void> {
  const format = outputFormat(flags);
  if (role !== undefined) assertName('role', role);
  await withRegistry(flags, 'read', async (registry, config) => {
    const names = role !== undefined ? [role] : await registry.roles();
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

function leaseRow(lease: LeaseInfo): LeaseRow {
  return {
    name: lease.name,
    holder: lease.holder?.identity ?? null,
    fencingToken: lease.fencingToken,
    acquireTime: lease.holder?.acquireTime?.toISOString() ?? null,
    renewTime: lease.renewTime?.toISOString() ?? null,
    leaseDurationSeconds: lease.leaseDurationMs / 1000,
  };
}

function leaseTable(kind: string, rows: LeaseRow[], holderTitle: string): string {
  return table([kind, holderTitle, 'token', 'held for', 'renewed', 'lease'], rows.map((r) => [r.name, r.holder ?? '(none)', r.fencingToken, r.holder ? age(since(r.acquireTime)) : '-', age(since(r.renewTime)), `${r.leaseDurationSeconds}s`]));
}

/** `rollcall leader [election]`: the leader of one election, or of every election, through `elections()`. */
export async function leaderCommand(election: string | undefined, flags: ListingFlags): Promise<void> {
  const format = outputFormat(flags);
  if (election !== undefined) assertName('election', election);
  await withRegistry(flags, 'read', async (registry, config) => {
    const rows = (await registry.elections()).filter((e) => election === undefined || e.name === election).map(leaseRow);
    if (election !== undefined && rows.length === 0) throw new StoreConflictError('NOT_FOUND', `no election ${election} in cluster ${config.resolved.cluster}`, { backend: registry.backend });
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

/** `rollcall locks`: every lock of the cluster and who holds it, through `locks()`. */
export async function locksCommand(flags: ListingFlags): Promise<void> {
  const format = outputFormat(flags);
  await withRegistry(flags, 'read', async (registry, config) => {
    const rows = (await registry.locks()).map(leaseRow);
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
