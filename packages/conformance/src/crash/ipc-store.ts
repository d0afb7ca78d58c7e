import { type ErrorCode, RegistryError } from '@rollcall/core';
import type { MessageChannel } from '@rollcall/child-harness';
import type { LeaseRecord, RecordKey, RecordList, RecordStore, StoredRecord, StoreSupports, WatchEvent, WatchListener, WatchSubscription } from '@rollcall/core/spi';

/**
 * A RecordStore carried over a process's IPC channel: the parent serves a real
 * store (`serveStore`), the child uses `IpcRecordStore`. It exists so a child
 * process can run core's algorithms against a store that lives only in the
 * parent (the memory store): requests, responses and watch events cross the
 * channel, nothing is simulated. When the child dies, its records stay in the
 * parent's store and expire like any crashed client's.
 */

/** An error as it crosses the channel: its stable code survives. */
interface WireError {
  code: ErrorCode;
  message: string;
  backend: string;
}

type CallOp = 'get' | 'create' | 'update' | 'delete' | 'list';

/** Child → parent. */
type StoreRequest =
  | { ch: 'store'; kind: 'call'; id: number; op: CallOp; args: unknown[] }
  | { ch: 'store'; kind: 'watch'; id: number; prefix: string; fromRevision: string }
  | { ch: 'store'; kind: 'unwatch'; id: number };

/** Parent → child. */
type StoreReply =
  | { ch: 'store'; kind: 'result'; id: number; ok: true; value: unknown }
  | { ch: 'store'; kind: 'result'; id: number; ok: false; error: WireError }
  | { ch: 'store'; kind: 'watch-event'; id: number; event: WatchEvent }
  | { ch: 'store'; kind: 'watch-error'; id: number; error: WireError };

function isStoreMessage(message: unknown): message is { ch: 'store' } {
  return typeof message === 'object' && message !== null && (message as { ch?: unknown }).ch === 'store';
}

function toWire(err: unknown, backend: string): WireError {
  if (err instanceof RegistryError) return { code: err.code, message: err.message.replace(/^\[rollcall\] \[[^\]]*\] /, ''), backend: err.backend };
  return { code: 'INTERNAL', message: String((err as Error)?.message ?? err), backend };
}

function fromWire(error: WireError): RegistryError {
  return new RegistryError(error.code, error.message, { backend: error.backend });
}

/**
 * Parent side: answers the child's store requests from `store` and forwards
 * its watch events. Returns a function that stops serving and closes every
 * watch the child opened (call it when the child exits).
 */
export function serveStore(channel: MessageChannel, store: RecordStore): () => void {
  const watches = new Map<number, WatchSubscription>();
  let open = true;
  const send = (reply: StoreReply) => {
    // The child may be gone (SIGKILL): a failed send is expected then, and ignored.
    if (!open) return;
    try {
      channel.send(reply, () => {});
    } catch {
      /* channel already closed */
    }
  };
  const onMessage = (message: unknown) => {
    if (!isStoreMessage(message)) return;
    const request = message as StoreRequest;
    if (request.kind === 'call') {
      const call = (store[request.op] as (...args: unknown[]) => Promise<unknown>).apply(store, request.args);
      call.then(
        (value) => send({ ch: 'store', kind: 'result', id: request.id, ok: true, value }),
        (err: unknown) => send({ ch: 'store', kind: 'result', id: request.id, ok: false, error: toWire(err, store.backend) }),
      );
    } else if (request.kind === 'watch') {
      const subscription = store.watch(request.prefix, request.fromRevision, {
        event: (event) => send({ ch: 'store', kind: 'watch-event', id: request.id, event }),
        error: (err) => {
          watches.delete(request.id);
          send({ ch: 'store', kind: 'watch-error', id: request.id, error: toWire(err, store.backend) });
        },
      });
      watches.set(request.id, subscription);
    } else if (request.kind === 'unwatch') {
      watches.get(request.id)?.close();
      watches.delete(request.id);
    }
  };
  channel.on('message', onMessage);
  return () => {
    open = false;
    channel.off('message', onMessage);
    for (const subscription of watches.values()) subscription.close();
    watches.clear();
  };
}

/** What the child needs to know about the parent's store. */
export interface IpcStoreDescription {
  /** The served store's `backend`. */
  backend: string;
  /** The served store's `maxPayloadBytes`. */
  maxPayloadBytes: number;
  /** The served store's behaviours the proxy passes on (`syncedProgress`, `orderedCreation`; records cross whole, `created` too); its optional members are not served. Default none. */
  syncedProgress?: boolean;
  orderedCreation?: boolean;
}

/** Child side: a RecordStore whose every call is answered by the parent's `serveStore`. */
export class IpcRecordStore implements RecordStore {
  readonly spiVersion = 1 as const;
  readonly backend: string;
  readonly maxPayloadBytes: number;
  /** Only the six calls cross the channel: what the served store marks on its watches, no optional member. */
  readonly supports: StoreSupports;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: RegistryError) => void }>();
  private readonly watches = new Map<number, WatchListener>();
  private readonly onMessage = (message: unknown) => this.receive(message);

  constructor(
    private readonly channel: MessageChannel,
    description: IpcStoreDescription,
  ) {
    this.backend = description.backend;
    this.maxPayloadBytes = description.maxPayloadBytes;
    this.supports = { ...(description.syncedProgress ? { syncedProgress: true } : {}), ...(description.orderedCreation ? { orderedCreation: true } : {}) };
    channel.on('message', this.onMessage);
  }

  get(key: RecordKey): Promise<StoredRecord | undefined> {
    return this.call('get', [key]) as Promise<StoredRecord | undefined>;
  }

  create(key: RecordKey, record: LeaseRecord): Promise<StoredRecord> {
    return this.call('create', [key, record]) as Promise<StoredRecord>;
  }

  update(key: RecordKey, record: LeaseRecord, version: string): Promise<StoredRecord> {
    return this.call('update', [key, record, version]) as Promise<StoredRecord>;
  }

  async delete(key: RecordKey, version: string): Promise<void> {
    await this.call('delete', [key, version]);
  }

  list(prefix: string): Promise<RecordList> {
    return this.call('list', [prefix]) as Promise<RecordList>;
  }

  watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    const id = this.nextId++;
    this.watches.set(id, listener);
    this.channel.send({ ch: 'store', kind: 'watch', id, prefix, fromRevision } satisfies StoreRequest);
    return {
      close: () => {
        if (!this.watches.delete(id)) return;
        this.channel.send({ ch: 'store', kind: 'unwatch', id } satisfies StoreRequest);
      },
    };
  }

  async close(): Promise<void> {
    for (const id of [...this.watches.keys()]) this.channel.send({ ch: 'store', kind: 'unwatch', id } satisfies StoreRequest);
    this.watches.clear();
    this.channel.off('message', this.onMessage);
  }

  private call(op: CallOp, args: unknown[]): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.channel.send({ ch: 'store', kind: 'call', id, op, args } satisfies StoreRequest);
    });
  }

  private receive(message: unknown): void {
    if (!isStoreMessage(message)) return;
    const reply = message as StoreReply;
    if (reply.kind === 'result') {
      const pending = this.pending.get(reply.id);
      if (!pending) return;
      this.pending.delete(reply.id);
      if (reply.ok) pending.resolve(reply.value);
      else pending.reject(fromWire(reply.error));
    } else if (reply.kind === 'watch-event') {
      this.watches.get(reply.id)?.event(reply.event);
    } else if (reply.kind === 'watch-error') {
      const listener = this.watches.get(reply.id);
      this.watches.delete(reply.id);
      listener?.error(fromWire(reply.error));
    }
  }
}
