// A Rollcall process as a Deployment runs it (the quick start in ../README.md):
// configuration from REGISTRY_* variables, identity and pod from the downward API, a
// readiness endpoint, and SIGTERM (a pod deletion, a rolling update) answered by
// withdrawing the member and handing over leadership before the process exits.
// Prints one JSON line per event, which `kubectl logs` shows.
import { createServer } from 'node:http';
import { configFromEnv, createRegistry, shutdownOnSignals } from '@rollcall/core';

const role = process.env.ROLE ?? 'worker';
const log = (event, fields = {}) => console.log(JSON.stringify({ at: new Date().toISOString(), event, ...fields }));

// one identity per process: a container that crashed and was restarted is a new member
// and a new candidate (as a new ZooKeeper session would be), never its dead predecessor
const identity = `${process.env.POD_NAME}.${Date.now().toString(36)}`;
const registry = await createRegistry(configFromEnv({ ...process.env, REGISTRY_IDENTITY: identity }));
let ready = false;
registry.on('lost', () => (ready = false));
registry.on('reconnected', () => (ready = true));

await registry.announce({ role, payload: { pod: process.env.POD_NAME } });
log('announced', { role, identity: registry.identity });
if (role === 'master') {
  const leadership = registry.campaign('scheduler');
  leadership.on('elected', ({ fencingToken }) => log('elected', { fencingToken }));
  leadership.on('lost', ({ reason }) => log('leadershipLost', { reason }));
}
ready = true;

// the readiness probe: ready while the registry can serve
const probe = createServer((req, res) => {
  res.writeHead(req.url === '/readyz' && ready ? 200 : 503).end();
}).listen(Number(process.env.PROBE_PORT ?? 8080));

// SIGTERM: not ready, then withdraw, resign and release (within 10 s of the pod's 30 s grace)
shutdownOnSignals(registry, {
  beforeClose: () => {
    ready = false;
    probe.close();
    log('stopping');
  },
  exit: false,
}).done.then(({ outcome }) => {
  log('stopped', { outcome });
  process.exit(outcome === 'closed' ? 0 : 1);
});
