import { createGlobalSetup } from '@rollcall/tools/testenv';
import { backendsUnderTest } from '../src/backends.js';
import { E2E_INSTANCE } from '../src/instance.js';

const servers = [...new Set(backendsUnderTest().flatMap((b) => b.servers))];

// The soak restarts servers: a private instance, stopped after the run. (No server at all for sqlite
// alone: createGlobalSetup([]) would mean every server.)
export default servers.length > 0 ? createGlobalSetup(servers, { privateInstance: E2E_INSTANCE }) : () => {};
