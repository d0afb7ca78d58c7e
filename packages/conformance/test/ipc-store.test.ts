import { EventEmitter } from 'node:events';
import type { RecordStore } from '@rollcall/core/spi';
import { MemoryStore, sharedMemoryBackend } from '@rollcall/core/testing';
import type { MessageChannel } from '@rollcall/child-harness';
import { IpcRecordStore, serveStore } from '../src/crash/ipc-store.js';
import { storeConformance } from '../src/index.js';

/**
 * The IPC proxy the crash child uses must itself be a conforming store: run the
 * store suite through it, over an in-process channel pair that clones every
 * message as process IPC would.
 */
const backend = sharedMemoryBackend('conformance-ipc');
const inner = new Map<RecordStore, MemoryStore>();

function channelPair(): [MessageChannel, MessageChannel] {
  const a = new EventEmitter();
  const b = new EventEmitter();
  const end = (self: EventEmitter, other: EventEmitter): MessageChannel => ({
    send(message, callback) {
      const copy = structuredClone(message);
      setImmediate(() => other.emit('message', copy));
      callback?.(null);
      return true;
    },
    on: (event, listener) => self.on(event, listener),
    off: (event, listener) => self.off(event, listener),
  });
  return [end(a, b), end(b, a)];
}

storeConformance({
  name: 'memory over the IPC proxy',
  openStore: async (cluster) => {
    const served = new MemoryStore({ backend, cluster });
    const [parent, child] = channelPair();
    const stop = serveStore(parent, served);
    const proxy = new IpcRecordStore(child, { backend: served.backend, maxPayloadBytes: served.maxPayloadBytes });
    const close = proxy.close.bind(proxy);
    proxy.close = async () => {
      await close();
      stop();
      await served.close();
    };
    inner.set(proxy, served);
    return proxy;
  },
  capabilities: {
    compact: () => backend.compact(),
    partition: (store) => inner.get(store)!.partition(),
    heal: (store) => inner.get(store)!.heal(),
  },
});
