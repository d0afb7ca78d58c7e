import type { ConfigSource, ErrorCode, JsonValue } from '@rollcall/core';
import type { IpcStoreDescription } from '../ipc-store.js';

/** The control messages between the suite and its crash child (`ch: 'ctl'`; store traffic uses `ch: 'store'`). */

/** How the child builds its registry. */
export type ChildInit = (
  /** Connect on its own: `createRegistry(config)`. */
  | { kind: 'config'; config: ConfigSource }
  /** Use the parent's store over IPC: `createRegistry(config, { store: ipcStore })`. */
  | { kind: 'ipc-store'; config: Record<string, unknown>; store: IpcStoreDescription }
) & {
  /** Shifts the child's wall clock (record timestamps) by this many milliseconds, as a host with a wrong clock. Its monotonic clock is untouched. */
  wallSkewMs?: number;
};

/** What the parent can ask the child to do. Each is answered by one `reply`. */
export type ChildCommand =
  | { op: 'announce'; role: string; id: string; payload?: JsonValue }
  | { op: 'update'; role: string; id: string; payload: JsonValue }
  /** Replies at once; `elected` events follow. */
  | { op: 'campaign'; election: string }
  /** Replies once the lock is held, with its fencing token. */
  | { op: 'lock'; name: string };

/** What the child reports as it happens. */
export type ChildEvent =
  | { type: 'elected'; election: string; fencingToken: number }
  | { type: 'lost'; election: string; fencingToken: number; reason: string }
  | { type: 'lockAcquired'; name: string; fencingToken: number }
  | { type: 'lockLost'; name: string; fencingToken: number; reason: string };

export type ParentMessage = { ch: 'ctl'; kind: 'init'; init: ChildInit } | { ch: 'ctl'; kind: 'command'; id: number; command: ChildCommand };

export type ChildMessage =
  | { ch: 'ctl'; kind: 'ready' }
  | { ch: 'ctl'; kind: 'fatal'; error: { code?: ErrorCode; message: string } }
  | { ch: 'ctl'; kind: 'reply'; id: number; ok: true; value?: JsonValue }
  | { ch: 'ctl'; kind: 'reply'; id: number; ok: false; error: { code?: ErrorCode; message: string } }
  | { ch: 'ctl'; kind: 'event'; event: ChildEvent };

export function isControl(message: unknown): message is { ch: 'ctl' } {
  return typeof message === 'object' && message !== null && (message as { ch?: unknown }).ch === 'ctl';
}
