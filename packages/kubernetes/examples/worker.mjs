// A Rollcall process as a Deployment runs it (the quick start in ../README.md):
// configuration from REGISTRY_* variables, identity and pod from the downward API, the
// readiness probe (with REGISTRY_MEMBER_LIVENESS=pod, the pod's Ready is the member's
// liveness), and SIGTERM (a pod deletion, a rolling update) answered by withdrawing the
// member and handing over leadership before the process exits.
// Prints one JSON line per event, which `kubectl logs` shows.
import { configFromEnv, createRegistry, shutdownOnSignals } from '@rollcall/core';
import { serveReadinessProbe } from '@rollcall/kubernetes';

const role = process.env.ROLE ?? 'worker';
const log = (event, fields = {}) => console.log(JSON.stringify({ at: new Date().toISOString(), event, ...fields }));

// one identity per process: a container that crashed and was restarted is a new member
// and a new candidate (as a new ZooKeeper session would be), never its dead predecessor
const identity = `${process.env.POD_NAME}.${Date.now().toString(36)}`;
const registry = await createRegistry(configFromEnv({ ...process.env, REGISTRY_IDENTITY: identity }));
// the readiness probe: 200 while the registry can serve (an API server restart is not a
// death), once this process has announced itself
let started = false;
const probe = await serveReadinessProbe(registry, { port: Number(process.env.PROBE_PORT ?? 8080), healthy: () => started });

await registry.announce({ role, payload: { pod: process.env.POD_NAME } });
log('announced', { role, identity: registry.identity });
if (role === 'master') {
  const leadership = registry.campaign('scheduler');
  leadership.on('elected', ({ fencingToken }) => log('elected', { fencingToken }));
  leadership.on('lost', ({ reason }) => log('leadershipLost', { reason }));
}
// PEER_ROLE: another role this process follows (the quick start's workers follow the
// masters and the masters the workers), one line per member added or removed
if (process.env.PEER_ROLE) {
  registry.watchMembers(process.env.PEER_ROLE, (e) => log('peer', { type: e.type, role: process.env.PEER_ROLE, id: e.member.id }));
}
started = true;

// SIGTERM: not ready, then withdraw, resign and release (within 10 s of the pod's 30 s grace)
shutdownOnSignals(registry, {
  beforeClose: () => {
    started = false;
    void probe.close();
    log('stopping');
  },
  exit: false,
}).done.then(({ outcome }) => {
  log('stopped', { outcome });
  process.exit(outcome === 'closed' ? 0 : 1);
});
