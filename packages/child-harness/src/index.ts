/**
 * `@rollcall/child-harness`: one way to run a registry (or anything) in a
 * child process and talk to it. The conformance suite's crash cases, the e2e
 * candidates, the scale benchmark's workers and the CLI demo's nodes all run
 * on it. It imports nothing of vitest, so a process that is not a test can use it.
 */
export { ChildHandle, type ChildExit, type ChildOptions } from './parent.js';
export { serveParent, type ParentLink, type ServeOptions } from './serve.js';
export { lineChannel, type MessageChannel } from './channel.js';
export { fromWireFailure, toWireFailure, type WireFailure } from './protocol.js';
export { packageFile } from './package-file.js';
export { WaitTimeoutError } from './wait-timeout-error.js';
