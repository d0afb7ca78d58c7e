import { type LeaseInfo, type Member, StoreConflictError } from '@rollcall/core';
import { assertName } from '@rollcall/core/admin';
import type { ConfigFlags } from '../config.js';
import { withRegistry } from '../connect.js';
import { ExitCode } from '../errors.js';
import { age, compactJson, outputFormat, printJson, shortIncarnation, since, table } from '../output.js';
import { isStale, leaseStale, memberStale, STALE_NOTE } from '../stale.js';

export interface ListingFlags extends ConfigFlags {
  output?: string;
  json?: boolean;
  /** Exit CHECK_FAILED (8) when a holder or member shown is STALE. */
  check?: boolean;
}

/** The age of a renewal, marked when it is STALE. */
function renewal(renewTime: Date | string | null | undefined, leaseMs: number): string {
  return `${age(since(renewTime))}${isStale(renewTime, leaseMs) ? ' STALE' : ''}`;
}

/** A member's heartbeat column: the age of its renewal, STALE, or how it is judged when not by its lease. */
function memberRenewal(m: Member): string {
  if (m.judgedBy === 'unverified') return `${age(since(m.renewTime))} UNVERIFIED`;
  if (m.judgedBy === 'pod') return `${age(since(m.renewTime))} (pod Ready)`;
  return renewal(m.renewTime, m.leaseDurationMs);
}

const UNVERIFIED_NOTE = 'UNVERIFIED: a pod member whose pod readiness this identity may not read (get/list/watch endpointslices: rollcall manifests --liveness pod); shown while its record exists\n';

/** What a listing returns: STALE entries fail `--check`. */
function outcome(stale: number, flags: ListingFlags, format: string): number {
  if (stale > 0 && format === 'table') process.stdout.write(STALE_NOTE);
  if (stale > 0 && flags.check) {
    process.stderr.write(`rollcall: ${stale} STALE ${stale === 1 ? 'entry' : 'entries'} (--check)\n`);
    return ExitCode.CHECK_FAILED;
  }
  return ExitCode.OK;
}

/** `rollcall members [role]`: the members the registry sees, through `members(role)`. */
export async function membersCommand(role: string | undefined, flags: ListingFlags): Promise<number> {
  const format = outputFormat(flags);
  if (role !== undefined) assertName('role', role);
  return withRegistry(flags, 'read', async (registry, config) => {
    const names = role !== undefined ? [role] : await registry.roles();
    const members = (await Promise.all(names.map((r) => registry.members(r)))).flat();
    const stale = members.filter(memberStale).length;
    if (format === 'json') {
      printJson(
        members.map((m) => ({
          role: m.role,
          id: m.id,
          incarnation: m.incarnation,
          payload: m.payload ?? null,
          acquireTime: m.acquireTime?.toISOString() ?? null,
          renewTime: m.renewTime?.toISOString() ?? null,
          heartbeatAgeMs: since(m.renewTime) ?? null,
          leaseDurationMs: m.leaseDurationMs,
          stale: memberStale(m),
          ...(m.judgedBy ? { judgedBy: m.judgedBy } : {}),
        })),
      );
      return outcome(stale, flags, format);
    }
    if (members.length === 0) {
      process.stdout.write(`no members${role ? ` of role ${role}` : ''} in cluster ${config.resolved.cluster} (${registry.backend})\n`);
      return ExitCode.OK;
    }
    process.stdout.write(table(['role', 'id', 'incarnation', 'heartbeat', 'up', 'payload'], members.map((m) => [m.role, m.id, shortIncarnation(m.incarnation), memberRenewal(m), age(since(m.acquireTime)), compactJson(m.payload)])) + '\n');
    if (members.some((m) => m.judgedBy === 'unverified')) process.stdout.write(UNVERIFIED_NOTE);
    return outcome(stale, flags, format);
  });
}

interface LeaseRow {
  name: string;
  holder: string | null;
  fencingToken: number;
  acquireTime: string | null;
  renewTime: string | null;
  leaseDurationSeconds: number;
  /** Held, and its last renewal older than its lease (see {@link leaseStale}). */
  stale: boolean;
}

function leaseRow(lease: LeaseInfo): LeaseRow {
  return {
    name: lease.name,
    holder: lease.holder?.identity ?? null,
    fencingToken: lease.fencingToken,
    acquireTime: lease.holder?.acquireTime?.toISOString() ?? null,
    renewTime: lease.renewTime?.toISOString() ?? null,
    leaseDurationSeconds: lease.leaseDurationMs / 1000,
    stale: leaseStale(lease),
  };
}

function leaseTable(kind: string, rows: LeaseRow[], holderTitle: string): string {
  return table([kind, holderTitle, 'token', 'held for', 'renewed', 'lease'], rows.map((r) => [r.name, r.holder ?? '(none)', r.fencingToken, r.holder ? age(since(r.acquireTime)) : '-', `${age(since(r.renewTime))}${r.stale ? ' STALE' : ''}`, `${r.leaseDurationSeconds}s`]));
}

/** `rollcall leader [election]`: the leader of one election, or of every election, through `elections()`. */
export async function leaderCommand(election: string | undefined, flags: ListingFlags): Promise<number> {
  const format = outputFormat(flags);
  if (election !== undefined) assertName('election', election);
  return withRegistry(flags, 'read', async (registry, config) => {
    const rows = (await registry.elections()).filter((e) => election === undefined || e.name === election).map(leaseRow);
    if (election !== undefined && rows.length === 0) throw new StoreConflictError('NOT_FOUND', `no election ${election} in cluster ${config.resolved.cluster}`, { backend: registry.backend });
    const stale = rows.filter((r) => r.stale).length;
    if (format === 'json') {
      printJson(election !== undefined ? rows[0] : rows);
      return outcome(stale, flags, format);
    }
    if (rows.length === 0) {
      process.stdout.write(`no elections in cluster ${config.resolved.cluster} (${registry.backend})\n`);
      return ExitCode.OK;
    }
    process.stdout.write(leaseTable('election', rows, 'leader') + '\n');
    return outcome(stale, flags, format);
  });
}

/** `rollcall locks`: every lock of the cluster and who holds it, through `locks()`. */
export async function locksCommand(flags: ListingFlags): Promise<number> {
  const format = outputFormat(flags);
  return withRegistry(flags, 'read', async (registry, config) => {
    const rows = (await registry.locks()).map(leaseRow);
    const stale = rows.filter((r) => r.stale).length;
    if (format === 'json') {
      printJson(rows);
      return outcome(stale, flags, format);
    }
    if (rows.length === 0) {
      process.stdout.write(`no locks in cluster ${config.resolved.cluster} (${registry.backend})\n`);
      return ExitCode.OK;
    }
    process.stdout.write(leaseTable('lock', rows, 'holder') + '\n');
    return outcome(stale, flags, format);
  });
}
