import type { ConfigSource, JsonValue } from '@rollcall/core';
import type { IpcStoreDescription } from './ipc-store.js';

/** What the suite and its crash child say to each other, inside the harness's envelope (`@rollcall/child-harness`, protocol.ts). */

/** How the child builds its registry. */
export type CrashInit = (
  /** Connect on its own: `createRegistry(config)`. */
  | { kind: 'config'; config: ConfigSource }
  /** Use the parent's store over IPC: `createRegistry(config, { store: ipcStore })`. */
  | { kind: 'ipc-store'; config: Record<string, unknown>; store: IpcStoreDescription }
) & {
  /** Shifts the child's wall clock (record timestamps) by this many milliseconds, as a host with a wrong clock. Its monotonic clock is untouched. */
  wallSkewMs?: number;
};

/** What the parent can ask the child to do. Each is answered by one reply. */
export type CrashCommand =
  | { op: 'announce'; role: string; id: string; payload?: JsonValue }
  | { op: 'update'; role: string; id: string; payload: JsonValue }
  /** Replies at once; `elected` events follow. */
  | { op: 'campaign'; election: string }
  /** Replies once the lock is held, with its fencing token. */
  | { op: 'lock'; name: string };

/** What the child reports as it happens. */
export type CrashEvent =
  | { type: 'elected'; election: string; fencingToken: number }
  | { type: 'lost'; election: string; fencingToken: number; reason: string }
  | { type: 'lockAcquired'; name: string; fencingToken: number }
  | { type: 'lockLost'; name: string; fencingToken: number; reason: string };
