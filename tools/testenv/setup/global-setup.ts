import { createGlobalSetup, parseServerList } from './global-setup-factory.js';

/**
 * Vitest global setup for the servers named in ROLLCALL_TESTENV_SERVERS (comma-separated),
 * or every server when it is unset.
 */
export default createGlobalSetup(parseServerList(process.env.ROLLCALL_TESTENV_SERVERS));
