// The README's usage example, type-checked by the build.
import { createRegistry, shutdownOnSignals } from '@rollcall/core';

const registry = await createRegistry({ type: 'memory', cluster: 'orders' });
shutdownOnSignals(registry);
const me = await registry.announce({ role: 'worker', payload: { cpu: 0.2, status: 'NORMAL' } });
const leadership = registry.campaign('scheduler');
leadership.on('elected', ({ fencingToken }) => console.log(`leading, term ${fencingToken}`));
registry.watchMembers('worker', (e) => console.log(e.type, e.member.id, e.member.payload));

const lock = await registry.lock('nightly-report', { timeoutMs: 30_000 });
await me.update({ cpu: 0.9, status: 'BUSY' });
await lock.release();
await registry.close();
