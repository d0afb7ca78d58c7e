import type { ErrorCode } from '@rollcall/core';

/**
 * The envelope of every control message between a parent and a child process
 * run through this harness (`ch: 'ctl'`; the IPC store's traffic uses
 * `ch: 'store'` on the same channel). What is inside (`init`, `command`,
 * `event`) is each user's own protocol.
 */
export type ParentMessage<Init, Command> =
  | { ch: 'ctl'; kind: 'init'; init: Init }
  /** With an `id`, the child answers with one `reply`; without, it answers nothing. */
  | { ch: 'ctl'; kind: 'command'; id?: number; command: Command };

/** A failure as it crosses the channel: its stable code survives. */
export interface WireFailure {
  code?: ErrorCode;
  message: string;
}

export type ChildMessage<Event> =
  | { ch: 'ctl'; kind: 'ready' }
  | { ch: 'ctl'; kind: 'fatal'; error: WireFailure }
  | { ch: 'ctl'; kind: 'reply'; id: number; ok: true; value?: unknown }
  | { ch: 'ctl'; kind: 'reply'; id: number; ok: false; error: WireFailure }
  | { ch: 'ctl'; kind: 'event'; event: Event };

export function isControl(message: unknown): message is { ch: 'ctl' } {
  return typeof message === 'object' && message !== null && (message as { ch?: unknown }).ch === 'ctl';
}

/** A failure as the other side will read it. */
export function toWireFailure(err: unknown): WireFailure {
  const code = (err as { code?: unknown } | undefined)?.code;
  return { ...(typeof code === 'string' ? { code: code as ErrorCode } : {}), message: String((err as Error)?.message ?? err) };
}

/** The Error a {@link WireFailure} stands for, with its `code`. */
export function fromWireFailure(failure: WireFailure, prefix = ''): Error & { code?: ErrorCode } {
  return Object.assign(new Error(`${prefix}${failure.message}`), failure.code === undefined ? {} : { code: failure.code });
}
