import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';

/**
 * A two-way message channel between a parent and its child process: the
 * fork IPC channel (a ChildProcess on the parent's side, `process` on the
 * child's) is one as it is; {@link lineChannel} makes one of two pipes.
 */
export interface MessageChannel {
  /** With a callback, a failed send (the other side is gone) is reported there rather than as an `error` event. */
  send(message: unknown, callback?: (error: Error | null) => void): unknown;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
}

/**
 * A channel of JSON lines over two pipes (the child's stdin and stdout). A
 * write to a pipe is synchronous on Linux, so a line written just before a
 * SIGKILL reaches the parent: what the e2e candidates need, whose last words
 * are evidence. Values must be JSON; a line that is not is no message, and is skipped.
 */
export function lineChannel(input: Readable, output: Writable): MessageChannel {
  const listeners = new Set<(message: unknown) => void>();
  const lines = createInterface({ input });
  // readline re-emits its input's errors: a socket reset by a SIGKILLed peer is that peer's end, which `close` tells.
  lines.on('error', () => {});
  lines.on('line', (line) => {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      return; // not a message: something else the other side printed
    }
    for (const listener of [...listeners]) listener(message);
  });
  // Writing to a process that was just killed fails with EPIPE: that is the kill, not an error.
  output.on('error', () => {});
  return {
    send(message, callback) {
      if (output.destroyed || output.writableEnded) {
        callback?.(new Error('the channel is closed'));
        return false;
      }
      return output.write(`${JSON.stringify(message)}\n`, (err) => callback?.(err ?? null));
    },
    on(_event, listener) {
      listeners.add(listener);
    },
    off(_event, listener) {
      listeners.delete(listener);
    },
  };
}
