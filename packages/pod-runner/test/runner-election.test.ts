import { waitFor } from '@rollcall/conformance';
import { createRegistry, type Logger, type Registry, systemClock } from '@rollcall/core';
import { MemoryBackend, MemoryStore } from '@rollcall/core/testing';
import { ApiClient, userAgent } from '@rollcall/kube-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EnteredTerm, RunnerElection } from '../src/runner-election.js';
import { TermFence } from '../src/term-fence.js';
import { admin } from './runner-env.js';

/**
 * The runner election on kwok's API server: the term Lease raised (to the
 * registry's fencing token, or without a registry to its term + 1) before a
 * term opens, the term closed when leadership is lost. The namespace has no
 * fencing policy: the probe finds `client` mode at once.
 */

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const timing = { election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200 } };
let namespace: string;
let client: ApiClient;
const closers: (() => unknown)[] = [];

beforeAll(async () => {
  namespace = await admin.namespace('runner-election');
  client = new ApiClient(admin.kc, 10_000, userAgent('runner-election-test'));
  closers.push(() => client.close());
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/** An election whose terms only note their opening and closing. */
function election(runner: string, registry?: Registry) {
  const log: string[] = [];
  const entered: EnteredTerm[] = [];
  const e = new RunnerElection({
    client, namespace, runner, registry, clock: systemClock, logger: quiet,
    fenced: (t) => void log.push(`fenced ${t.term} ${t.mode}`),
    open: async (t) => {
      entered.push(t);
      log.push(`open ${t.term}`);
      return { close: async () => void log.push(`close ${t.term}`) };
    },
  });
  closers.push(() => e.close());
  return { e, log, entered };
}

describe('RunnerElection on kwok', () => {
  it('without a registry each start takes the term Lease\'s term + 1: the older process is a term behind', async () => {
    const fence = new TermFence({ client, namespace, runner: 'alone' });
    const a = election('alone');
    await a.e.start();
    const first = (await fence.read())!.term;
    expect(first).toBeGreaterThanOrEqual(1);
    expect(a.log).toEqual([`fenced ${first} client`, `open ${first}`]);
    const b = election('alone');
    await b.e.start();
    expect((await fence.read())!.term).toBe(first + 1);
    expect(b.log).toEqual([`fenced ${first + 1} client`, `open ${first + 1}`]);
    await a.e.close();
    await b.e.close();
    expect(a.log.at(-1)).toBe(`close ${first}`);
    expect(b.log.at(-1)).toBe(`close ${first + 1}`);
    expect(a.e.term).toBeUndefined();
  });

  it('a term that sees a later term\'s write is closed: no longer leading, never entered again (without a registry a later start is known only by its writes)', async () => {
    const a = election('superseded');
    await a.e.start();
    const first = a.entered[0]!;
    expect(a.e.leads).toBe(true);
    const b = election('superseded');
    await b.e.start();
    const second = b.entered[0]!;
    expect(second.term).toBe(first.term + 1);
    first.superseded(second.term);
    first.superseded(second.term); // told once
    await a.e.settled();
    expect(a.log).toEqual([`fenced ${first.term} client`, `open ${first.term}`, `close ${first.term}`]);
    expect(a.e.term).toBeUndefined();
    expect(a.e.leads).toBe(false);
    expect(first.leads()).toBe(false);
    expect(b.e.leads).toBe(true);
    await a.e.close();
    await b.e.close();
  });

  it('with a registry the elected runner raises the Lease to its fencing token before its term opens; a loss closes the term, and the next leader opens a later one', async () => {
    const backend = new MemoryBackend();
    const registry = async (identity: string) => {
      const r = await createRegistry({ type: 'memory', identity, ...timing }, { store: new MemoryStore({ backend, cluster: 'runner-election' }) });
      closers.push(() => r.close());
      return r;
    };
    const fence = new TermFence({ client, namespace, runner: 'pair' });
    const a = election('pair', await registry('a'));
    await a.e.start();
    await waitFor(() => a.e.term, 10_000, 'a to open its term');
    const first = a.entered[0]!;
    expect((await fence.read())!.term).toBe(first.term);
    expect(first.leads()).toBe(true);

    const b = election('pair', await registry('b'));
    await b.e.start();
    expect(b.e.term).toBeUndefined();
    await a.e.close(); // resigns: b is elected
    expect(a.log).toEqual([`fenced ${first.term} client`, `open ${first.term}`, `close ${first.term}`]);
    expect(first.leads()).toBe(false);
    await waitFor(() => b.e.term, 10_000, 'b to open its term');
    const second = b.entered[0]!;
    expect(second.term).toBeGreaterThan(first.term);
    expect((await fence.read())!.term).toBe(second.term);
    expect(second.leads()).toBe(true);
    await b.e.close();
    expect(b.log.at(-1)).toBe(`close ${second.term}`);
  });
});
