import { createGlobalSetup } from '../testenv/index.js';

/**
 * The smoke tests run on a private instance of the environment (own root, own ports), so
 * they neither disturb nor are disturbed by other packages' tests, which nx runs at the
 * same time against the shared instance — the fault tests here stop and kill servers.
 * It is also the proof that a private instance works. Stopped again afterwards.
 */
export default createGlobalSetup([], { privateInstance: { root: '/tmp/rollcall-testenv-selftest', portBase: 25000 } });
