import { createGlobalSetup } from '@rollcall/tools/testenv';
import { backendsUnderTest, migrationsUnderTest, releaseRollingUnderTest, soakBackend } from '../src/backends.js';
import { E2E_INSTANCE } from '../src/instance.js';

// The soak's backends, both sides of every migration under test, and the rolling update's backends.
// (migrate-conformance.test.ts runs the suite on migrate(zookeeper→etcd) whenever a migration is under test.)
const migrations = migrationsUnderTest().flatMap((from) => [soakBackend(from), soakBackend('kubernetes'), soakBackend('zookeeper'), soakBackend('etcd')]);
const servers = [...new Set([...backendsUnderTest(), ...migrations, ...releaseRollingUnderTest()].flatMap((b) => b.servers))];

// The soak restarts servers: a private instance, stopped after the run. (No server at all for sqlite
// alone: createGlobalSetup([]) would mean every server.)
export default servers.length > 0 ? createGlobalSetup(servers, { privateInstance: E2E_INSTANCE }) : () => {};
