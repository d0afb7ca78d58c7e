import { TestenvError } from '../../env/errors.js';

/**
 * The few etcd v3 calls the environment makes itself, through etcd's JSON gRPC gateway
 * (on by default, on the client port): no client library, so tools needs no runtime
 * dependency. int64 fields travel as strings, keys and values as base64.
 */

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** etcd's answer when asked to compact at or below its last compaction. */
const COMPACTED = 'required revision has been compacted';

class EtcdGatewayError extends TestenvError {}

async function call<T>(endpoint: string, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${endpoint}/v3/${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  if (!res.ok) throw new EtcdGatewayError(`etcd ${endpoint} /v3/${path} answered ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

interface Header {
  header: { revision: string };
}

/** The store's current revision. */
export async function etcdRevision(endpoint: string): Promise<number> {
  const res = await call<Header>(endpoint, 'kv/range', { key: b64('\0'), count_only: true });
  return Number(res.header.revision);
}

/** Puts a key; returns the revision it created. */
export async function etcdPut(endpoint: string, key: string, value: string): Promise<number> {
  const res = await call<Header>(endpoint, 'kv/put', { key: b64(key), value: b64(value) });
  return Number(res.header.revision);
}

/** Deletes a key; returns the store's revision after it. */
export async function etcdDelete(endpoint: string, key: string): Promise<number> {
  const res = await call<Header>(endpoint, 'kv/deleterange', { key: b64(key) });
  return Number(res.header.revision);
}

/**
 * Discards every revision below `revision` (etcd keeps `revision` itself). Physical: it
 * returns once the backend has dropped them, so nothing is served from them afterwards.
 * A store already compacted at `revision` or later is left as it is.
 */
export async function etcdCompact(endpoint: string, revision: number): Promise<void> {
  try {
    await call(endpoint, 'kv/compaction', { revision: String(revision), physical: true });
  } catch (error) {
    if (!(error instanceof EtcdGatewayError && error.message.includes(COMPACTED))) throw error;
  }
}
