import { KubeConfig } from '@kubernetes/client-node';
import { createRegistry, type Leadership, type Registry } from '@rollcall/core';
import { observeFor, waitFor } from '@rollcall/conformance';
import { buildClientGoElector, ClientGoCandidate } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, userAgent } from '@rollcall/kube-client';
import { objectName, registryPlugin } from '../src/index.js';
import { Admin } from './admin.js';
import { kubeEnv } from './kube-env.js';

const timing = { election: { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 } };
const goTiming = { leaseDuration: '4s', renewDeadline: '3s', retryPeriod: '500ms' };
const admin = new Admin();
let namespace: string;
let binary: string;
const registries: Registry[] = [];
const candidates: ClientGoCandidate[] = [];

interface Term {
  who: string;
  from: number;
  to: number;
}

/** A Rollcall candidate's terms by wall clock (comparable with the Go process's on one host), from its events. */
class Terms {
  readonly closed: Term[] = [];
  private from: number | undefined;

  constructor(leadership: Leadership) {
    leadership.on('elected', () => (this.from = Date.now()));
    leadership.on('lost', () => {
      this.closed.push({ who: 'rollcall', from: this.from!, to: Date.now() });
      this.from = undefined;
    });
  }

  /** Every term, the current one ending now. */
  all(): Term[] {
    return this.from === undefined ? this.closed : [...this.closed, { who: 'rollcall', from: this.from, to: Date.now() }];
  }
}

function goTerms(candidate: ClientGoCandidate, killedAt: number | undefined): Term[] {
  const terms: Term[] = [];
  let from: number | undefined;
  for (const e of candidate.events) {
    if (e.type === 'ELECTED') from = e.at;
    if (e.type === 'LOST' && from !== undefined) terms.push({ who: 'client-go', from, to: e.at }), (from = undefined);
  }
  if (from !== undefined) terms.push({ who: 'client-go', from, to: killedAt ?? Date.now() });
  return terms;
}

function assertDisjoint(terms: Term[]): void {
  const sorted = [...terms].sort((a, b) => a.from - b.from);
  for (let i = 1; i < sorted.length; i++) expect(sorted[i]!.from, `${sorted[i]!.who} began before ${sorted[i - 1]!.who} ended`).toBeGreaterThanOrEqual(sorted[i - 1]!.to);
}

async function rollcall(identity: string, cluster: string): Promise<Registry> {
  const registry = await createRegistry({ type: 'kubernetes', cluster, identity, ...timing, kubernetes: { kubeconfig: kubeEnv().kubeconfig, namespace } }, { plugins: [registryPlugin as never] });
  registries.push(registry);
  return registry;
}

function goCandidate(lease: string, identity: string): ClientGoCandidate {
  const candidate = new ClientGoCandidate(binary, { kubeconfig: kubeEnv().kubeconfig, namespace, lease, identity, ...goTiming });
  candidates.push(candidate);
  return candidate;
}

beforeAll(async () => {
  namespace = await admin.namespace('interop');
  binary = await buildClientGoElector();
}, 600_000);

afterAll(async () => {
  candidates.forEach((c) => c.kill());
  await Promise.all(registries.map((r) => r.close()));
});

describe('interoperability with client-go leaderelection on one Lease', () => {
  it('Rollcall first: handover to client-go on resign, takeover after client-go crashes, never both leading', async () => {
    const cluster = 'interop-a';
    const lease = objectName(cluster, 'election/shared');
    const registry = await rollcall('rollcall-a', cluster);
    const first = registry.campaign('shared');
    const firstTerms = new Terms(first);
    await first.whenElected(AbortSignal.timeout(10_000));

    const go = goCandidate(lease, 'client-go-a');
    await go.event('STARTED', 10_000);
    // While Rollcall renews, client-go must stay a follower through several of its retry periods.
    await observeFor(3000);
    expect(go.leading).toBe(false);

    await first.resign();
    await go.event('ELECTED', 10_000);
    const second = registry.campaign('shared');
    const secondTerms = new Terms(second);
    await observeFor(2000); // client-go renews; Rollcall must not take over
    expect(second.isLeader).toBe(false);

    const killedAt = Date.now();
    go.kill();
    await second.whenElected(AbortSignal.timeout(15_000));
    assertDisjoint([...firstTerms.all(), ...secondTerms.all(), ...goTerms(go, killedAt)]);
    await second.resign();
  });

  it('client-go first: Rollcall labels the foreign Lease, follows, and takes over when client-go releases it', async () => {
    const cluster = 'interop-b';
    const lease = objectName(cluster, 'election/shared');
    const go = goCandidate(lease, 'client-go-b');
    await go.event('ELECTED', 15_000);
    const registry = await rollcall('rollcall-b', cluster);
    const leadership = registry.campaign('shared');
    const terms = new Terms(leadership);
    const observer = registry.observe('shared');
    await new Promise<void>((resolve) => (observer.leader?.identity === 'client-go-b' ? resolve() : observer.on('changed', (e) => e.leader?.identity === 'client-go-b' && resolve())));
    expect(leadership.isLeader).toBe(false);
    go.stop(); // ReleaseOnCancel: client-go empties holderIdentity on its way out
    await go.exited();
    const stoppedAt = Date.now();
    await leadership.whenElected(AbortSignal.timeout(10_000));
    // Woken by the watch when client-go released, not by the lease running out.
    expect(Date.now() - stoppedAt).toBeLessThan(timing.election.leaseDurationMs);
    assertDisjoint([...terms.all(), ...goTerms(go, undefined)]);
  });

  it('writes the Lease fields as client-go does: MicroTime with six fractional digits, renewTime changing on every renew', async () => {
    const cluster = 'interop-c';
    const registry = await rollcall('rollcall-c', cluster);
    const leadership = registry.campaign('fields');
    await leadership.whenElected(AbortSignal.timeout(10_000));
    const kc = new KubeConfig();
    kc.loadFromFile(kubeEnv().kubeconfig);
    const client = new ApiClient(kc, 5000, userAgent('interop-test'));
    const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${objectName(cluster, 'election/fields')}`;
    const context = { verb: 'get', resource: 'leases', namespace };
    type Lease = { metadata: { resourceVersion: string }; spec: Record<string, unknown> };
    const one = await client.request<Lease>({ method: 'GET', path, context });
    const seen = new Set<string>([String(one.spec.renewTime)]);
    try {
      await waitFor(async () => seen.add(String((await client.request<Lease>({ method: 'GET', path, context })).spec.renewTime)).size >= 3, 10_000, 'three different renewTimes');
    } finally {
      client.close();
    }
    expect(seen.size).toBeGreaterThanOrEqual(3);
    expect(one.spec).toMatchObject({ holderIdentity: 'rollcall-c', leaseDurationSeconds: 4, leaseTransitions: expect.any(Number) });
    for (const field of ['acquireTime', 'renewTime']) expect(String(one.spec[field])).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    await leadership.resign();
    const released = await admin.coordination.readNamespacedLease({ name: objectName(cluster, 'election/fields'), namespace });
    expect(released.spec?.holderIdentity ?? '').toBe('');
  });
});
