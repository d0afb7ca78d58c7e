/**
 * What the metrics cost a process: the time each backend call gains from
 * being counted and timed, and what one scrape costs with a large cluster in
 * view. `npx tsx packages/metrics/bench/overhead.ts` (build first).
 */
import { performance } from 'node:perf_hooks';
import { createRegistry, type Registry } from '@rollcall/core';
import { MemoryBackend, MemoryStore } from '@rollcall/core/testing';
import { Registry as PromRegistry } from 'prom-client';
import { machine } from '@rollcall/tools/testenv';
import { registerRollcallMetrics } from '../src/index.js';

const UPDATES = 20_000;
const ROUNDS = 5;
const MEMBERS = 1_000;
const ROLES = 10;
const ELECTIONS = 100;

async function open(backend: MemoryBackend, identity: string): Promise<Registry> {
  return createRegistry({ type: 'memory', cluster: 'bench', identity }, { store: new MemoryStore({ backend, cluster: 'bench' }) });
}

/** CPU microseconds per member.update() (one compare-and-set through the store and its watch event), without and with metrics: rounds interleaved, best of each, as the machine is shared. */
async function perUpdate(): Promise<{ without: number; with: number }> {
  const best = { without: Infinity, with: Infinity };
  for (let round = 0; round < ROUNDS * 2; round++) {
    const withMetrics = round % 2 === 1;
    const registry = await open(new MemoryBackend(), 'updater');
    if (withMetrics) registerRollcallMetrics(registry, new PromRegistry());
    const member = await registry.announce({ role: 'worker', id: 'w' });
    const start = process.cpuUsage();
    for (let i = 0; i < UPDATES; i++) await member.update({ n: i });
    const used = process.cpuUsage(start);
    const us = (used.user + used.system) / UPDATES;
    if (withMetrics) best.with = Math.min(best.with, us);
    else best.without = Math.min(best.without, us);
    await registry.close();
  }
  return best;
}

async function scrape(): Promise<{ ms: number; bytes: number; series: number }> {
  const backend = new MemoryBackend();
  const peers = await Promise.all(Array.from({ length: 10 }, (_, i) => open(backend, `peer-${i}`)));
  for (let i = 0; i < MEMBERS; i++) await peers[i % peers.length]!.announce({ role: `role-${i % ROLES}`, id: `member-${i}` });
  for (let i = 0; i < ELECTIONS; i++) peers[i % peers.length]!.campaign(`election-${i}`);
  const watcher = await open(backend, 'watcher');
  const prom = new PromRegistry();
  registerRollcallMetrics(watcher, prom, { elections: 'all' });
  await new Promise((resolve) => setTimeout(resolve, 500)); // let the campaigns' first terms land
  let text = '';
  let best = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    const start = performance.now();
    text = await prom.metrics();
    best = Math.min(best, performance.now() - start);
  }
  await Promise.all([watcher, ...peers].map((r) => r.close()));
  return { ms: best, bytes: Buffer.byteLength(text), series: text.split('\n').filter((l) => l && !l.startsWith('#')).length };
}

console.log(`${new Date().toISOString().slice(0, 10)}, ${machine()}`);
const u = await perUpdate();
console.log(`member.update() on the memory store, CPU time, best of ${ROUNDS} x ${UPDATES} each, interleaved: ${u.without.toFixed(1)} µs without metrics, ${u.with.toFixed(1)} µs with`);
const s = await scrape();
console.log(`one scrape with ${MEMBERS} members in ${ROLES} roles and ${ELECTIONS} elections in view (elections: 'all'): ${s.ms.toFixed(2)} ms, ${s.series} series, ${(s.bytes / 1024).toFixed(1)} KiB`);
