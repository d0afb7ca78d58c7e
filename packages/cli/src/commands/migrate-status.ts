import { createRegistry, ErrorCode, hasCode, RegistryError, type LeaseInfo, type Registry, type RegistryConfig, type RegistryType } from '@rollcall/core';
import { MIGRATE_TYPE, type MigrateOptions } from '@rollcall/migrate';
import { resolveCliConfig, type ConfigFlags } from '../config.js';
import { ExitCode, usageError } from '../errors.js';
import { outputFormat, printJson, table } from '../output.js';

export interface MigrateStatusFlags extends ConfigFlags {
  output?: string;
  json?: boolean;
}

type Side = 'from' | 'to';

/** What one side shows: its live members (`role/id`) and the live holder and token of each election and lock. */
export interface SideView {
  members: string[];
  elections: Record<string, { holder: string | null; fencingToken: number }>;
  locks: Record<string, { holder: string | null; fencingToken: number }>;
}

/** Where the migration stands, and whether the next step of the rolling restart is safe. */
export interface MigrationVerdict {
  /** 1: every process on `from`; 2: processes moving to (or all on) `migrate`; 3: processes moving to `to`; 4: every process on `to`. 0: nothing to judge from, or phases mixed. */
  phase: 0 | 1 | 2 | 3 | 4;
  /** The next step, in words. */
  next: string;
  safe: boolean;
  /** Why it is not safe (empty when it is), or what to watch. */
  reasons: string[];
}

/**
 * Judges a migration from both sides' views. A process is seen through the
 * members it announces: on `from` only (phase 1 config), on both (migrate), on
 * `to` only (phase 3 config). A `from`-only process and a `to`-only one never
 * contend, so they must never run at the same time; a `to`-only process may
 * start only once every process is migrating and every election and lock is
 * held on `to` with a token at least `from`'s.
 */
export function judgeMigration(from: SideView, to: SideView): MigrationVerdict {
  const onFrom = new Set(from.members);
  const onTo = new Set(to.members);
  const fromOnly = [...onFrom].filter((m) => !onTo.has(m));
  const toOnly = [...onTo].filter((m) => !onFrom.has(m));
  const both = [...onFrom].filter((m) => onTo.has(m));
  const list = (ids: string[]) => ids.slice(0, 5).join(', ') + (ids.length > 5 ? `, and ${ids.length - 5} more` : '');
  if (fromOnly.length > 0 && toOnly.length > 0) {
    return {
      phase: 0,
      next: 'stop the mix: move the to-only processes back to migrate (or the from-only ones forward to migrate) first',
      safe: false,
      reasons: [`members on from only (${list(fromOnly)}) and on to only (${list(toOnly)}) at once: a from-only and a to-only process never contend, so two could lead`],
    };
  }
  if (fromOnly.length + toOnly.length + both.length === 0) {
    return { phase: 0, next: 'announce members from every process: status judges phases by where members are', safe: false, reasons: ['no members on either side'] };
  }
  const leases = (kind: 'elections' | 'locks') => [...new Set([...Object.keys(from[kind]), ...Object.keys(to[kind])])].sort().map((name) => ({ kind: kind === 'elections' ? 'election' : 'lock', name, from: from[kind][name], to: to[kind][name] }));
  const all = [...leases('elections'), ...leases('locks')];
  if (toOnly.length === 0 && both.length === 0) {
    const live = all.filter((l) => l.to?.holder);
    return {
      phase: 1,
      next: 'phase 2: restart the processes one at a time with registry.type=migrate (from and to)',
      safe: live.length === 0,
      reasons: live.map((l) => `${l.kind} ${l.name} has a live holder on to (${l.to!.holder}) though no process announces there: is a to-only process running?`),
    };
  }
  if (toOnly.length === 0) {
    if (fromOnly.length > 0) {
      return { phase: 2, next: `phase 2: go on restarting with registry.type=migrate (${fromOnly.length} on from only: ${list(fromOnly)})`, safe: true, reasons: [] };
    }
    const reasons: string[] = [];
    for (const l of all) {
      if (l.from?.holder && l.from.holder !== l.to?.holder) reasons.push(`${l.kind} ${l.name} is held on from by ${l.from.holder} but on to by ${l.to?.holder ?? 'nobody'}: a process holds it on from only`);
      const fromToken = l.from?.fencingToken ?? 0;
      const toToken = l.to?.fencingToken ?? 0;
      if (toToken < fromToken) reasons.push(`${l.kind} ${l.name}: its token on to (${toToken}) is below from's (${fromToken}); a to-only holder would go backwards. Take it once from a migrating process first`);
    }
    return { phase: 2, next: 'phase 3: restart the processes one at a time with registry.type set to the to backend alone', safe: reasons.length === 0, reasons };
  }
  if (both.length > 0) return { phase: 3, next: `phase 3: go on restarting with the to backend alone (${both.length} still migrating: ${list(both)})`, safe: true, reasons: [] };
  const live = all.filter((l) => l.from?.holder);
  return {
    phase: 4,
    next: 'done: every process is on to; the from backend can be retired (its records are no longer read)',
    safe: live.length === 0,
    reasons: live.map((l) => `${l.kind} ${l.name} is still held on from by ${l.from!.holder}: some process still writes there`),
  };
}

async function viewOf(registry: Registry): Promise<SideView> {
  const roles = await registry.roles();
  const members = (await Promise.all(roles.map((r) => registry.members(r)))).flat().map((m) => `${m.role}/${m.id}`);
  const byName = (leases: LeaseInfo[]) => Object.fromEntries(leases.map((l) => [l.name, { holder: l.holder?.identity ?? null, fencingToken: l.fencingToken }]));
  return { members, elections: byName(await registry.elections()), locks: byName(await registry.locks()) };
}

/** A registry on one side alone, with the migration's core keys. */
function sideRegistry(config: RegistryConfig, side: Side): Promise<Registry> {
  const section = (config.options as unknown as MigrateOptions)[side];
  return createRegistry({
    type: section.type as RegistryType,
    cluster: config.cluster,
    identity: `${config.identity}-status-${side}`,
    requestTimeoutMs: config.requestTimeoutMs,
    election: config.election,
    lock: config.lock,
    member: config.member,
    ...(section[section.type] ? { [section.type]: section[section.type] } : {}),
    // Only looks: a sqlite side is opened read-only, so a wrong path is NOT_FOUND rather than a new, empty file.
    ...(section.type === 'sqlite' ? { sqlite: { ...(section.sqlite as object | undefined), readOnly: true } } : {}),
  });
}

/** `rollcall migrate status`: each side's members, holders and tokens, and the verdict; exits NOT_READY (9) when the next step is not safe. */
export async function migrateStatusCommand(flags: MigrateStatusFlags): Promise<number> {
  const format = outputFormat(flags);
  const config = await resolveCliConfig(flags);
  if (config.resolved.type !== MIGRATE_TYPE) throw usageError(`migrate status needs registry.type=migrate (with registry.migrate.from and registry.migrate.to), got ${config.resolved.type}`);
  const opened: Registry[] = [];
  try {
    const sections = config.resolved.options as unknown as MigrateOptions;
    const views: Partial<Record<Side, SideView>> = {};
    // A sqlite side whose file does not exist yet (phase 1: nothing has run on to) is empty, and said so; it is not created.
    const missing: Partial<Record<Side, string>> = {};
    let notFound: unknown;
    for (const side of ['from', 'to'] as const) {
      try {
        const registry = await sideRegistry(config.resolved, side);
        opened.push(registry);
        views[side] = await viewOf(registry);
      } catch (err) {
        if (!(hasCode(err, 'NOT_FOUND') && sections[side].type === 'sqlite')) throw err;
        notFound = err;
        missing[side] = err.message.replace(/^\[rollcall\] \[\w+\] /, '');
        views[side] = { members: [], elections: {}, locks: {} };
      }
    }
    // Neither side exists: a wrong path, not a migration.
    if (missing.from && missing.to) throw new RegistryError(ErrorCode.NOT_FOUND, `neither side of the migration exists: from: ${missing.from}; to: ${missing.to}`, { backend: 'sqlite', cause: notFound });
    const [from, to] = [views.from!, views.to!];
    const verdict = judgeMigration(from, to);
    const types = { from: sections.from.type, to: sections.to.type };
    if (format === 'json') printJson({ cluster: config.resolved.cluster, backends: types, from, to, ...(missing.from || missing.to ? { missing } : {}), verdict });
    else printTable(types, from, to, verdict, missing);
    return verdict.safe ? ExitCode.OK : ExitCode.NOT_READY;
  } finally {
    await Promise.allSettled(opened.map((r) => r.close()));
  }
}

function printTable(types: Record<Side, string>, from: SideView, to: SideView, verdict: MigrationVerdict, missing: Partial<Record<Side, string>>): void {
  const ids = [...new Set([...from.members, ...to.members])].sort();
  // The side's name first: two sides of one type (sqlite to sqlite) read apart only by it.
  const where = (id: string) => (from.members.includes(id) ? (to.members.includes(id) ? 'both' : `from only (${types.from})`) : `to only (${types.to})`);
  const out: string[] = [];
  for (const side of ['from', 'to'] as const) if (missing[side]) out.push(`${side}: ${missing[side]}; shown as empty`);
  out.push(ids.length ? table(['member', 'on'], ids.map((id) => [id, where(id)])) : 'no members on either side');
  const rows: string[][] = [];
  for (const kind of ['elections', 'locks'] as const) {
    for (const name of [...new Set([...Object.keys(from[kind]), ...Object.keys(to[kind])])].sort()) {
      const cell = (v: SideView['elections'][string] | undefined) => (v ? `${v.holder ?? '(none)'} #${v.fencingToken}` : '-');
      rows.push([kind === 'elections' ? 'election' : 'lock', name, cell(from[kind][name]), cell(to[kind][name])]);
    }
  }
  if (rows.length) out.push(table(['kind', 'name', `on ${types.from} (from)`, `on ${types.to} (to)`], rows));
  out.push(`phase ${verdict.phase || '?'}; next: ${verdict.next}`);
  out.push(verdict.safe ? 'verdict: safe' : `verdict: NOT safe\n${verdict.reasons.map((r) => `  - ${r}`).join('\n')}`);
  process.stdout.write(out.join('\n\n') + '\n');
}
