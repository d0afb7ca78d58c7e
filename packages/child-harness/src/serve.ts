import type { Readable, Writable } from 'node:stream';
import { lineChannel, type MessageChannel } from './channel.js';
import { isControl, toWireFailure, type ChildMessage, type ParentMessage } from './protocol.js';

/** What a child process does with what its parent sends. */
export interface ServeOptions<Init, Command> {
  /** The transport its parent chose ({@link ChildOptions.transport}). Default `ipc`. */
  transport?: 'ipc' | 'lines';
  /**
   * With the `lines` transport, the streams to read commands from and write
   * events to, instead of stdin and stdout: a socket, for a child its parent did
   * not spawn (a process in a pod, connected back over a unix socket). Ending
   * `input` is the parent going away. Default stdin and stdout.
   */
  streams?: { input: Readable; output: Writable };
  /** Called with the parent's `init`, once. */
  onInit?: (init: Init) => void;
  /** Called with each command; what it resolves with (or rejects with) is the reply, when the parent asked for one. */
  onCommand?: (command: Command) => unknown;
  /** Called when the parent goes away (it ended, or closed the channel). Default: exit 0, so no child outlives its parent. */
  onParentGone?: () => void;
}

/** The child's side of the harness: what it reports to its parent. */
export interface ParentLink<Event> {
  /** The channel to the parent; other traffic (the IPC store) may share it. */
  readonly channel: MessageChannel;
  /** Reports an event (kept by the parent in arrival order). */
  report(event: Event): void;
  /** Tells the parent the child is ready (what {@link ChildHandle.ready} waits for). */
  ready(): void;
  /** Tells the parent the child could not start, with the reason. */
  fatal(err: unknown): void;
}

/**
 * Serves the parent of this process, started by {@link ChildHandle}: commands
 * go to `onCommand`, and their answers back. Fails at once when the process
 * has no channel to a parent.
 */
export function serveParent<Init = unknown, Command = unknown, Event = unknown>(options: ServeOptions<Init, Command>): ParentLink<Event> {
  const transport = options.transport ?? 'ipc';
  if (transport === 'ipc' && !process.send) {
    console.error(`${process.argv[1]} must be started by its parent with an IPC channel`);
    process.exit(2);
  }
  const input = options.streams?.input ?? process.stdin;
  const channel = transport === 'lines' ? lineChannel(input, options.streams?.output ?? process.stdout) : (process as unknown as MessageChannel);
  const send = (message: ChildMessage<Event>) => {
    // The parent may be gone: nothing left to tell.
    if (transport === 'lines' || process.connected) channel.send(message, () => {});
  };
  channel.on('message', (raw) => {
    if (!isControl(raw)) return;
    const message = raw as ParentMessage<Init, Command>;
    if (message.kind === 'init') {
      options.onInit?.(message.init);
      return;
    }
    const { id, command } = message;
    Promise.resolve()
      .then(() => options.onCommand?.(command))
      .then(
        (value) => id !== undefined && send({ ch: 'ctl', kind: 'reply', id, ok: true, ...(value === undefined ? {} : { value }) }),
        (err: unknown) => id !== undefined && send({ ch: 'ctl', kind: 'reply', id, ok: false, error: toWireFailure(err) }),
      );
  });
  const gone = options.onParentGone ?? (() => process.exit(0));
  if (transport === 'lines') input.on('end', gone);
  else process.on('disconnect', gone);
  return {
    channel,
    report: (event) => send({ ch: 'ctl', kind: 'event', event }),
    ready: () => send({ ch: 'ctl', kind: 'ready' }),
    fatal: (err) => send({ ch: 'ctl', kind: 'fatal', error: toWireFailure(err) }),
  };
}
