/**
 * `@rollcall/conformance/crash`: the suite's crash client, for the
 * repository's benchmarks that kill a leader the same way. Not on the index:
 * a backend's test reaches it only through the `crashChild` capability.
 */
export { CrashClient } from './client.js';
export type { CrashCommand, CrashEvent } from './protocol.js';
