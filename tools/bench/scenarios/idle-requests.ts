import { setTimeout as delay } from 'node:timers/promises';
import type { Registry } from '@rollcall/core';
import { IDLE_ROLES, type IdleRequests, type IdleRole, type RoleRequests } from '../results.js';
import { OpenRegistries, type BackendConfig, type BenchTarget, type IdleProbe } from '../target.js';
import { benchCluster, WAIT_BOUND_MS } from '../timing.js';
import { whenSeesLeader } from './handover.js';

/** Requests counted by a server: in all, and by method (verb, RPC, statement kind) where it tells them apart. */
export interface RequestTotals {
  total: number;
  byMethod?: Record<string, number>;
}

/** A server's own request counter, which cannot tell one client from another. */
export interface ServerCounter {
  /** What is read, for the notes under the table. */
  source: string;
  /** The counts now, since the server started. */
  read(): Promise<RequestTotals>;
  /** Requests each read() adds to `total` itself (a SHOW STATUS, a four-letter word). */
  readCost: number;
}

/** A counter that tells clients apart by their credentials. */
export interface ClientCounter {
  /** What is read, for the notes under the table. */
  source: string;
  /** The configuration under which `role`'s process is a client of its own, and the name the server counts it under. */
  client(role: IdleRole): Promise<{ backendConfig: BackendConfig; name: string }>;
  /** Starts counting now. */
  start(): { stop(clients: readonly string[]): Promise<Map<string, RequestTotals>> };
}

const ELECTION = 'scheduler';

/**
 * Brings each process to its role's steady state: the member announced, the
 * leader elected, the follower campaigning and aware of the leader. The plain
 * registry holds nothing.
 */
async function settle(processes: Partial<Record<IdleRole, Registry>>): Promise<void> {
  const { member, leader, follower } = processes;
  await member?.announce({ role: 'worker', payload: { status: 'NORMAL' } });
  await leader?.campaign(ELECTION).whenElected(AbortSignal.timeout(WAIT_BOUND_MS));
  if (follower) {
    follower.campaign(ELECTION);
    await whenSeesLeader(follower, ELECTION, leader!.identity);
  }
}

/** Opens a registry per role with the backend's default timings. */
async function openRoles(registries: OpenRegistries, roles: readonly IdleRole[]): Promise<Partial<Record<IdleRole, Registry>>> {
  const cluster = benchCluster('idle');
  const opened: Partial<Record<IdleRole, Registry>> = {};
  for (const [i, role] of roles.entries()) opened[role] = await registries.add({ cluster, identity: `idle-${role}`, slot: 40 + i, defaultTiming: true });
  return opened;
}

/** `totals` counted over `windowMs`, per minute. */
export function perMinute(totals: RequestTotals, windowMs: number): RoleRequests {
  const rate = (n: number) => (n * 60_000) / windowMs;
  const byMethod = totals.byMethod && Object.fromEntries(Object.entries(totals.byMethod).map(([m, n]) => [m, rate(n)]));
  return { perMinute: rate(totals.total), ...(byMethod ? { byMethod } : {}) };
}

/** What a counter counted between two readings. */
export function difference(after: RequestTotals, before: RequestTotals): RequestTotals {
  const total = after.total - before.total;
  if (!after.byMethod) return { total };
  const byMethod: Record<string, number> = {};
  for (const [method, n] of Object.entries(after.byMethod)) {
    const d = n - (before.byMethod?.[method] ?? 0);
    if (d !== 0) byMethod[method] = d;
  }
  return { total, byMethod };
}

/**
 * Idle processes counted by a server-wide counter: one window per role, with
 * only that process connected, so the server counts only it; the follower is
 * the window with a leader and a follower minus the one with the leader
 * alone. The server must have no other clients meanwhile (a private test
 * environment).
 */
export function serverWideIdleProbe(backendConfig: BenchTarget['backendConfig'], counter: ServerCounter): IdleProbe {
  const countWindow = async (roles: readonly IdleRole[], windowMs: number): Promise<RequestTotals> => {
    const registries = new OpenRegistries({ backendConfig });
    try {
      await settle(await openRoles(registries, roles));
      const before = await counter.read();
      await delay(windowMs); // the measurement period itself, not a wait for something to happen
      const window = difference(await counter.read(), before);
      return { ...window, total: window.total - counter.readCost };
    } finally {
      await registries.closeAll();
    }
  };
  return {
    async measure(windowMs) {
      const registry = await countWindow(['registry'], windowMs);
      const member = await countWindow(['member'], windowMs);
      const leader = await countWindow(['leader'], windowMs);
      const leaderAndFollower = await countWindow(['leader', 'follower'], windowMs);
      return {
        source: `${counter.source}; one window of ${windowMs / 1000} s per role, the follower being (leader + follower) − leader`,
        roles: {
          registry: perMinute(registry, windowMs),
          member: perMinute(member, windowMs),
          leader: perMinute(leader, windowMs),
          follower: perMinute(difference(leaderAndFollower, leader), windowMs),
        },
      };
    },
  };
}

/**
 * Idle processes counted per client: every role at once, each its own
 * client, over one window as long as the server-wide probe's four.
 */
export function perClientIdleProbe(counter: ClientCounter): IdleProbe {
  return {
    async measure(windowMs) {
      const spanMs = IDLE_ROLES.length * windowMs;
      const clients = await Promise.all(IDLE_ROLES.map((role) => counter.client(role)));
      const opened: Partial<Record<IdleRole, Registry>> = {};
      const closers: OpenRegistries[] = [];
      try {
        const cluster = benchCluster('idle');
        for (const [i, role] of IDLE_ROLES.entries()) {
          const registries = new OpenRegistries({ backendConfig: () => clients[i]!.backendConfig });
          closers.push(registries);
          opened[role] = await registries.add({ cluster, identity: `idle-${role}`, slot: 0, defaultTiming: true });
        }
        await settle(opened);
        const counting = counter.start();
        await delay(spanMs); // the measurement period itself
        const counts = await counting.stop(clients.map((c) => c.name));
        const roles = Object.fromEntries(IDLE_ROLES.map((role, i) => [role, perMinute(counts.get(clients[i]!.name)!, spanMs)])) as Record<IdleRole, RoleRequests>;
        return { source: `${counter.source}; all roles at once over ${spanMs / 1000} s`, roles } satisfies IdleRequests;
      } finally {
        await Promise.all(closers.map((r) => r.closeAll()));
      }
    },
  };
}
