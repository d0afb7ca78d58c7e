/**
 * The main job until `rollcall demo` exists: three masters campaign on the
 * memory store, two workers heartbeat, the leader is cut off (as a crash looks
 * to the others) and a follower takes over after the lease; then the new
 * leader resigns and the handover comes through the watch.
 */
import { createRegistry, type Leadership, type Registry } from '@rollcall/core';
import { MemoryBackend, MemoryStore } from '@rollcall/core/testing';

const timing = {
  election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
  member: { heartbeatIntervalMs: 500, leaseDurationMs: 2000 },
};
const backend = new MemoryBackend();
const started = performance.now();
const at = () => `${((performance.now() - started) / 1000).toFixed(3).padStart(7)} s`;

interface Master {
  name: string;
  store: MemoryStore;
  registry: Registry;
  leadership: Leadership;
}

async function master(name: string): Promise<Master> {
  const store = new MemoryStore({ backend, cluster: 'demo' });
  const registry = await createRegistry({ type: 'memory', identity: name, ...timing }, { store });
  const leadership = registry.campaign('scheduler');
  leadership.on('elected', ({ fencingToken }) => console.log(`${at()}  ${name} elected leader, fencing token ${fencingToken}`));
  leadership.on('lost', ({ reason }) => console.log(`${at()}  ${name} is no longer leader (${reason})`));
  return { name, store, registry, leadership };
}

function until(predicate: () => boolean, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = performance.now() + timeoutMs;
    const poll = setInterval(() => {
      if (predicate()) resolve(clearInterval(poll));
      else if (performance.now() > deadline) {
        clearInterval(poll);
        reject(new Error(`timed out after ${timeoutMs} ms`));
      }
    }, 5);
  });
}

const masters = await Promise.all(['master-1', 'master-2', 'master-3'].map(master));
const observer = await createRegistry({ type: 'memory', identity: 'console', ...timing }, { store: new MemoryStore({ backend, cluster: 'demo' }) });
observer.watchMembers('worker', (e) => console.log(`${at()}  worker ${e.type}: ${e.member.id} ${JSON.stringify(e.member.payload)}`));
const workers = await Promise.all(
  ['worker-1', 'worker-2'].map(async (id, i) => {
    const store = new MemoryStore({ backend, cluster: 'demo' });
    const registry = await createRegistry({ type: 'memory', identity: id, ...timing }, { store });
    await registry.announce({ role: 'worker', id, payload: { cpu: 0.1 * (i + 1), status: 'NORMAL' } });
    return registry;
  }),
);

await until(() => masters.some((m) => m.leadership.isLeader), 5000);
const first = masters.find((m) => m.leadership.isLeader)!;
console.log(`${at()}  cutting ${first.name} off from the store, as a crash looks to its peers`);
const cutAt = performance.now();
first.store.partition();
await until(() => masters.some((m) => m !== first && m.leadership.isLeader), 10_000);
const second = masters.find((m) => m !== first && m.leadership.isLeader)!;
console.log(`${at()}  failover took ${Math.round(performance.now() - cutAt)} ms (lease ${timing.election.leaseDurationMs} ms)`);

console.log(`${at()}  ${second.name} resigns`);
const resignAt = performance.now();
await second.leadership.resign();
await until(() => masters.some((m) => m !== first && m !== second && m.leadership.isLeader), 10_000);
console.log(`${at()}  graceful handover took ${Math.round(performance.now() - resignAt)} ms, through the watch`);

console.log(`${at()}  worker-1 withdraws`);
await workers[0]!.close();
await until(() => true, 0);
for (const m of masters) await m.registry.close();
await workers[1]!.close();
await observer.close();
console.log(`${at()}  done`);
