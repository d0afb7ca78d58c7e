#!/usr/bin/env node
/**
 * Rollcall's elector and client-go's on one Lease (issue 12, item 5), on the
 * e2e private instance's API server, both at client-go's defaults (15 s lease,
 * 10 s renew deadline, 2 s retry period):
 *
 * 1. who wins in a mixed group: two Rollcall candidates and two client-go
 *    candidates (client-go's own `leaderelection`, the Go program in
 *    packages/kubernetes/interop); the leader leaves gracefully (Rollcall:
 *    resign; client-go: SIGTERM, which releases the Lease) and the others race
 *    for the next term. Rounds alternate: a Rollcall leader leaves, then a
 *    client-go leader leaves (to get one, the Rollcall candidates stand aside
 *    until a client-go candidate leads, then campaign again);
 * 2. a holder SIGKILLed and restarted under the same identity within its lease:
 *    the Lease's leaseTransitions before and after, for client-go.
 *
 * `npm run mixed-election -w @rollcall/e2e -- --rounds 20`
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import { createRegistry, type Leadership, type Registry } from '@rollcall/core';
import { objectName } from '@rollcall/kubernetes';
import { buildClientGoElector, ClientGoCandidate, down, requireTestEnv, summarize, up } from '@rollcall/tools/testenv';
import { E2E_INSTANCE } from './instance.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '20' } } });
const ROUNDS = Number(values.rounds);
/** client-go's defaults, which are Rollcall's too. */
const GO_TIMING = { leaseDuration: '15s', renewDeadline: '10s', retryPeriod: '2s' };
/** Bound on any one wait, milliseconds: a lease and a few retry periods. */
const BOUND_MS = 60_000;

type Kind = 'rollcall' | 'client-go';

/** One member of the mixed group, whatever its elector. */
interface Candidate {
  kind: Kind;
  identity: string;
  leading(): boolean;
  /** Resolves with the wall clock (ms) of this candidate's next election. */
  nextElected(): Promise<number>;
  /** Steps down gracefully (releasing the Lease) and stops campaigning. */
  leave(): Promise<void>;
  /** Campaigns again; resolves once it follows. */
  rejoin(): Promise<void>;
  close(): Promise<void>;
}

function rollcallCandidate(registry: Registry, election: string): Candidate {
  let leadership: Leadership | undefined = registry.campaign(election);
  return {
    kind: 'rollcall',
    identity: registry.identity,
    leading: () => leadership?.isLeader ?? false,
    nextElected: () => new Promise((resolve) => leadership!.once('elected', () => resolve(Date.now()))),
    leave: async () => {
      await leadership?.resign();
      leadership = undefined;
    },
    rejoin: async () => void (leadership ??= registry.campaign(election)),
    close: () => registry.close(),
  };
}

function clientGoCandidate(binary: string, lease: string, identity: string, logFile: string): Candidate {
  const kube = requireTestEnv('kubernetes');
  const start = () => new ClientGoCandidate(binary, { kubeconfig: kube.kubeconfig, namespace: kube.namespace, lease, identity, ...GO_TIMING, logFile });
  let go: ClientGoCandidate | undefined = start();
  return {
    kind: 'client-go',
    identity,
    leading: () => go?.leading ?? false,
    nextElected: () => {
      const seen = go!.events.filter((e) => e.type === 'ELECTED').length;
      return go!.event('ELECTED', BOUND_MS * 10, seen + 1).then((e) => e.at);
    },
    leave: async () => {
      go?.stop();
      await go?.exited();
      go = undefined;
    },
    rejoin: async () => {
      go ??= start();
      // It follows once it has read the Lease and seen who leads.
      await go.event('LEADER', BOUND_MS);
    },
    close: async () => {
      go?.stop();
      await go?.exited();
    },
  };
}

/** Resolves with the first of `candidates` to be elected next, and when (wall clock, ms). */
function firstElected(candidates: readonly Candidate[]): Promise<{ winner: Candidate; at: number }> {
  return Promise.race(candidates.map((c) => c.nextElected().then((at) => ({ winner: c, at }))));
}

function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no ${what} within ${BOUND_MS} ms`)), BOUND_MS)));
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

async function mixedGroup(binary: string, workDir: string): Promise<void> {
  const kube = requireTestEnv('kubernetes');
  const cluster = `mixed-${Date.now().toString(36)}`;
  const registries = await Promise.all(
    ['rollcall-1', 'rollcall-2'].map((identity) => createRegistry({ type: 'kubernetes', cluster, identity, kubernetes: { kubeconfig: kube.kubeconfig, namespace: kube.namespace } })),
  );
  // Rollcall first, so the Lease exists with its cluster label; client-go then follows the same Lease.
  const rollcall = registries.map((r) => rollcallCandidate(r, 'mixed'));
  await within(firstElected(rollcall), 'first leader');
  const lease = objectName(cluster, 'election/mixed');
  const clientGo = ['client-go-1', 'client-go-2'].map((identity) => clientGoCandidate(binary, lease, identity, join(workDir, `${identity}.log`)));
  await Promise.all(clientGo.map((c) => c.rejoin()));
  const group = [...rollcall, ...clientGo];
  const wins: Record<Kind, Record<Kind, number>> = { rollcall: { rollcall: 0, 'client-go': 0 }, 'client-go': { rollcall: 0, 'client-go': 0 } };
  const handover: Record<Kind, number[]> = { rollcall: [], 'client-go': [] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const leaverKind: Kind = round % 2 === 0 ? 'rollcall' : 'client-go';
      if (!group.some((c) => c.leading() && c.kind === leaverKind)) {
        // Stand the other kind aside until one of this kind leads, then let them campaign again.
        const aside = group.filter((c) => c.kind !== leaverKind);
        const next = firstElected(group.filter((c) => c.kind === leaverKind));
        // Followers first: the last to leave is the leader, and only this kind is left campaigning.
        for (const c of [...aside].sort((a, b) => Number(a.leading()) - Number(b.leading()))) await c.leave();
        await within(next, `${leaverKind} leader`);
        await Promise.all(aside.map((c) => c.rejoin()));
      }
      const leaver = group.find((c) => c.leading())!;
      const next = firstElected(group.filter((c) => c !== leaver));
      const leftAt = Date.now();
      await leaver.leave();
      const { winner, at } = await within(next, 'next leader');
      wins[leaver.kind][winner.kind]++;
      handover[winner.kind].push(at - leftAt);
      console.log(`  round ${round + 1}: ${leaver.identity} left, ${winner.identity} elected ${at - leftAt} ms later`);
      await leaver.rejoin();
    }
  } finally {
    await Promise.all(group.map((c) => c.close()));
  }
  console.log(`mixed group: 2 Rollcall + 2 client-go candidates on one Lease, both at 15 s / 10 s / 2 s, ${ROUNDS} graceful handovers`);
  for (const k of ['rollcall', 'client-go'] as const) console.log(`  a ${k} leader left ${wins[k].rollcall + wins[k]['client-go']} times: Rollcall won ${wins[k].rollcall}, client-go ${wins[k]['client-go']}`);
  for (const k of ['rollcall', 'client-go'] as const) {
    if (handover[k].length === 0) continue;
    const { n, p50, p99, max } = summarize(handover[k]);
    console.log(`  ${k} won ${n} times, elected ${p50} ms (p50), ${p99} ms (p99), ${max} ms (max) after the leader began to leave`);
  }
}

async function sameIdentityRestart(binary: string, workDir: string): Promise<void> {
  const kube = requireTestEnv('kubernetes');
  const config = new KubeConfig();
  config.loadFromFile(kube.kubeconfig);
  const leases = config.makeApiClient(CoordinationV1Api);
  const lease = `restart-${Date.now().toString(36)}`;
  const transitions = async () => (await leases.readNamespacedLease({ name: lease, namespace: kube.namespace })).spec?.leaseTransitions ?? 0;
  const start = () => new ClientGoCandidate(binary, { kubeconfig: kube.kubeconfig, namespace: kube.namespace, lease, identity: 'client-go-same', ...GO_TIMING, logFile: join(workDir, 'client-go-same.log') });
  const first = start();
  await first.event('ELECTED', BOUND_MS);
  const before = await transitions();
  first.kill();
  await first.exited();
  const killedAt = Date.now();
  const second = start();
  const elected = await second.event('ELECTED', BOUND_MS);
  const after = await transitions();
  second.stop();
  await second.exited();
  console.log(`client-go SIGKILLed and restarted under the same identity: elected again ${elected.at - killedAt} ms after the kill (lease 15 s), leaseTransitions ${before} -> ${after}`);
}

process.env.ROLLCALL_TESTENV_ROOT = E2E_INSTANCE.root;
process.env.ROLLCALL_TESTENV_PORT_BASE = String(E2E_INSTANCE.portBase);
const workDir = mkdtempSync(join(tmpdir(), 'rollcall-mixed-election-'));
try {
  await up(['kubernetes']);
  const binary = await buildClientGoElector();
  await sameIdentityRestart(binary, workDir);
  await mixedGroup(binary, workDir);
  console.log(`client-go logs: ${workDir}`);
} finally {
  if (process.env.ROLLCALL_TESTENV_KEEP !== '1') await down();
}
// The losers' waits for a next election are still pending.
process.exit(0);
