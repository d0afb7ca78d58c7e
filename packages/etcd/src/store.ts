import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import etcd3 from 'etcd3';
import { handleWhen, noop, retry, type IPolicy } from 'cockatiel';
import {
  ConfigurationError,
  InvalidArgumentError,
  RevisionTooOldError,
  StoreConflictError,
  UnavailableError,
  silentLogger,
  type Logger,
  type RegistryError,
} from '@rollcall/core';
import {
  CLUSTER_RULE,
  payloadBytes,
  type LeaseRecord,
  type RecordKey,
  type RecordList,
  type RecordStore,
  type StoredRecord,
  type WatchEvent,
  type WatchListener,
  type WatchSubscription,
} from '@rollcall/core/spi';
import { decodeRecord, encodeRecord } from './codec.js';
import { toRegistryError, type CallContext } from './errors.js';
import type { EtcdOptions } from './options.js';

const BACKEND = 'etcd';

// The slice of etcd3's low-level clients this store uses: the raw KV and Watch
// RPCs, so versions, revisions and compaction signals come straight from etcd.

interface KeyValue {
  key: Buffer;
  create_revision: string;
  mod_revision: string;
  value: Buffer;
}
interface ResponseHeader {
  revision: string;
}
interface RangeRequest {
  key: Buffer;
  range_end?: Buffer;
  limit?: number;
  keys_only?: boolean;
}
interface RangeResponse {
  header: ResponseHeader;
  kvs: KeyValue[];
}
type PutRequest = { key: Buffer; value: Buffer; lease?: string; ignore_lease?: boolean };
type RequestOp = { request_range: RangeRequest } | { request_put: PutRequest } | { request_delete_range: { key: Buffer } };
interface TxnRequest {
  compare: { key: Buffer; target: 'Create' | 'Mod'; result: 'Equal' | 'Less'; create_revision?: number; mod_revision?: string }[];
  success: RequestOp[];
  failure: RequestOp[];
}
interface TxnResponse {
  header: ResponseHeader;
  succeeded: boolean;
  responses: { response_range?: RangeResponse }[];
}
interface WatchResponse {
  header: ResponseHeader;
  created: boolean;
  canceled: boolean;
  compact_revision: string;
  cancel_reason: string;
  events: { type: 'Put' | 'Delete'; kv: KeyValue }[];
}
interface WatchStream {
  readonly writable: boolean;
  write(request: { create_request: { key: Buffer; range_end: Buffer; start_revision: string; progress_notify: boolean } }): unknown;
  on(event: 'data', listener: (response: WatchResponse) => void): WatchStream;
  on(event: 'error', listener: (error: Error) => void): WatchStream;
  on(event: 'end', listener: () => void): WatchStream;
  removeAllListeners(): WatchStream;
  end(): unknown;
  cancel(): void;
}
type CallOptions = { deadline?: number };
interface KeepAliveStream {
  write(request: { ID: string }): unknown;
  on(event: 'data', listener: (response: { ID: string; TTL: string }) => void): KeepAliveStream;
  on(event: 'error', listener: (error: Error) => void): KeepAliveStream;
  on(event: 'end', listener: () => void): KeepAliveStream;
  removeAllListeners(): KeepAliveStream;
  end(): unknown;
  cancel(): void;
}

/** The etcd3 client as this store uses it. An `Etcd3` instance fits. */
export interface EtcdClientSlice {
  readonly kv: {
    range(request: RangeRequest, options?: CallOptions): Promise<RangeResponse>;
    txn(request: TxnRequest, options?: CallOptions): Promise<TxnResponse>;
  };
  readonly watchClient: { watch(options?: CallOptions): Promise<WatchStream> };
  readonly leaseClient: {
    leaseGrant(request: { TTL: number; ID: number }, options?: CallOptions): Promise<{ ID: string; TTL: string }>;
    leaseRevoke(request: { ID: string }, options?: CallOptions): Promise<unknown>;
    leaseKeepAlive(options?: CallOptions): Promise<KeepAliveStream>;
  };
  close(): void;
}

/** What `EtcdStore.connect` needs besides the `registry.etcd.*` options. */
export interface EtcdStoreSettings {
  cluster: string;
  options: EtcdOptions;
  /** Bound on each call (gRPC deadline) and on a watch being created. Milliseconds. */
  requestTimeoutMs: number;
  logger?: Logger;
}

const CLUSTER = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const REVISION = /^[1-9]\d*$/;

/** The first key after every key that starts with `prefix`: a range's `range_end` for a prefix. */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

function readPem(key: string, file: string | undefined, kind: 'certificate' | 'private key'): Buffer | undefined {
  if (file === undefined) return undefined;
  const fail = (why: string, cause: unknown): never => {
    throw new ConfigurationError(`registry.etcd.${key}: ${JSON.stringify(file)} ${why}`, { key: `registry.etcd.${key}`, backend: BACKEND, cause });
  };
  let pem: Buffer;
  try {
    pem = readFileSync(file);
  } catch (err) {
    return fail(`cannot be read: ${(err as Error).message}`, err);
  }
  // gRPC accepts garbage here and fails later with an unhelpful handshake error: check it now.
  try {
    if (kind === 'certificate') new X509Certificate(pem);
    else createPrivateKey(pem);
  } catch (err) {
    fail(`is not a PEM ${kind}: ${(err as Error).message}`, err);
  }
  return pem;
}

function isUnavailable(err: Error): boolean {
  return err instanceof etcd3.GRPCUnavailableError;
}

/**
 * The etcd record store: one key per record under `<prefix>/<cluster>/`;
 * create-if-absent is a transaction on `create_revision = 0`, updates and
 * deletes are transactions on `mod_revision`, which is also the record's
 * version (etcd revisions never repeat, across deletes and re-creates too).
 * `list` is one range read, its revision the response header's; `watch` is a
 * prefix watch from that revision + 1, and a compacted revision ends it with
 * REVISION_TOO_OLD.
 */
export class EtcdStore implements RecordStore {
  readonly spiVersion = 1 as const;
  readonly backend = BACKEND;
  readonly maxPayloadBytes: number;
  /** `<prefix>/<cluster>/`: the etcd key prefix of this store's records. */
  readonly keyPrefix: string;
  private readonly base: Buffer;
  private readonly logger: Logger;
  private readonly watches = new Set<EtcdWatch>();
  private readonly memberLease: MemberLease | undefined;
  private closed = false;

  constructor(
    private readonly client: EtcdClientSlice,
    private readonly settings: EtcdStoreSettings,
  ) {
    if (!CLUSTER.test(settings.cluster)) throw new InvalidArgumentError(`cluster ${JSON.stringify(settings.cluster)} is not valid: ${CLUSTER_RULE}`, { backend: BACKEND });
    this.keyPrefix = `${settings.options.prefix}/${settings.cluster}/`;
    this.base = Buffer.from(this.keyPrefix, 'utf8');
    this.maxPayloadBytes = settings.options.maxPayloadBytes;
    this.logger = settings.logger ?? silentLogger;
    if (settings.options.memberLeaseSeconds > 0) this.memberLease = new MemberLease(client, settings.options.memberLeaseSeconds, this.logger);
  }

  /**
   * Builds a client from the options and proves it works: one read of the
   * cluster's prefix must succeed within `dialTimeoutMs`, so unreachable
   * endpoints, refused credentials and a missing permission fail here, typed.
   */
  static async connect(settings: EtcdStoreSettings): Promise<EtcdStore> {
    const { options, requestTimeoutMs } = settings;
    const logger = settings.logger ?? silentLogger;
    const tls = options.tls;
    const ca = readPem('tls.caFile', tls?.caFile, 'certificate');
    const cert = readPem('tls.certFile', tls?.certFile, 'certificate');
    const key = readPem('tls.keyFile', tls?.keyFile, 'private key');
    if (!CLUSTER.test(settings.cluster)) throw new InvalidArgumentError(`cluster ${JSON.stringify(settings.cluster)} is not valid: ${CLUSTER_RULE}`, { backend: BACKEND });
    const retries = options.endpoints.length - 1;
    let client: EtcdClientSlice;
    try {
      client = new etcd3.Etcd3({
        hosts: [...options.endpoints],
        // etcd3's types want a CA; gRPC takes null for "the system's CAs".
        ...(ca || cert ? { credentials: { rootCertificate: ca ?? (null as unknown as Buffer), privateKey: key, certChain: cert } } : {}),
        ...(options.username !== undefined ? { auth: { username: options.username, password: options.password ?? '' } } : {}),
        grpcOptions: {
          'grpc.keepalive_time_ms': options.keepaliveIntervalMs,
          'grpc.keepalive_timeout_ms': Math.max(1000, requestTimeoutMs),
          // etcd counts pings without an open stream as abuse and closes the connection.
          'grpc.keepalive_permit_without_calls': 0,
          // A restarted etcd is reached again within a second, not after gRPC's default backoff of up to 2 minutes.
          'grpc.initial_reconnect_backoff_ms': 100,
          'grpc.max_reconnect_backoff_ms': 1000,
        },
        defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + requestTimeoutMs }),
        faultHandling: {
          // No circuit breaker: it would refuse calls for seconds after etcd is back.
          host: () => noop,
          // Another member is tried only when this one is unreachable, never after a timeout (the write may have landed).
          global: retries > 0 ? (retry(handleWhen(isUnavailable), { maxAttempts: retries }) as IPolicy) : noop,
        },
      }) as unknown as EtcdClientSlice;
    } catch (err) {
      // gRPC refuses TLS material it cannot use (e.g. a key that does not match its certificate).
      throw new ConfigurationError(`registry.etcd.tls: the TLS files cannot be used together: ${(err as Error).message}`, { key: 'registry.etcd.tls', backend: BACKEND, cause: err });
    }
    const store = new EtcdStore(client, settings);
    const probe = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new UnavailableError(`could not connect to etcd at ${options.endpoints.join(', ')} within ${options.dialTimeoutMs} ms (registry.etcd.dialTimeoutMs)`, { backend: BACKEND })),
        options.dialTimeoutMs,
      );
      client.kv.range({ key: store.base, range_end: prefixEnd(store.base), limit: 1, keys_only: true }, { deadline: Date.now() + options.dialTimeoutMs }).then(
        () => {
          clearTimeout(timer);
          resolve();
        },
        (err: unknown) => {
          clearTimeout(timer);
          const mapped = store.fail(err, 'connect', store.keyPrefix);
          if (err instanceof etcd3.GRPCNotImplementedError) {
            return reject(new UnavailableError(`${options.endpoints.join(', ')} answered, but is not an etcd v3 endpoint (etcd's client URL, usually port 2379): ${(err as Error).message}`, { backend: BACKEND, cause: err }));
          }
          reject(
            mapped.code === 'UNAVAILABLE'
              ? new UnavailableError(`could not connect to etcd at ${options.endpoints.join(', ')} within ${options.dialTimeoutMs} ms: ${(err as Error).message}`, { backend: BACKEND, cause: err })
              : mapped,
          );
        },
      );
    });
    try {
      await probe;
    } catch (err) {
      client.close();
      throw err;
    }
    logger.info({ backend: BACKEND, endpoints: options.endpoints, keyPrefix: store.keyPrefix, username: options.username }, '[rollcall] [etcd] connected');
    return store;
  }

  async get(key: RecordKey): Promise<StoredRecord | undefined> {
    const etcdKey = this.etcdKey(key);
    const res = await this.call(`get ${key}`, etcdKey, () => this.client.kv.range({ key: etcdKey }));
    const kv = res.kvs[0];
    if (!kv) return undefined;
    const record = decodeRecord(key, kv.value);
    if (record instanceof Error) throw record;
    return { key, version: kv.mod_revision, record };
  }

  async create(key: RecordKey, record: LeaseRecord): Promise<StoredRecord> {
    const value = this.encode(record);
    const etcdKey = this.etcdKey(key);
    const lease = this.memberLease && key.startsWith('member/') ? this.memberLease : undefined;
    const attempt = async (): Promise<TxnResponse | 'lease-gone'> => {
      const leaseId = lease ? await this.call(`grant a lease for ${key}`, etcdKey, () => lease.current()) : undefined;
      try {
        return await this.call(`create ${key}`, etcdKey, () =>
          this.client.kv.txn({
            compare: [{ key: etcdKey, target: 'Create', result: 'Equal', create_revision: 0 }],
            success: [{ request_put: { key: etcdKey, value, ...(leaseId ? { lease: leaseId } : {}) } }],
            failure: [],
          }),
        );
      } catch (err) {
        // The lease expired (or was revoked) since it was granted: forget it so the retry grants a new one.
        if (leaseId && (err as Error).cause instanceof etcd3.EtcdLeaseInvalidError) {
          lease!.invalidate(leaseId);
          return 'lease-gone';
        }
        throw err;
      }
    };
    let res = await attempt();
    if (res === 'lease-gone') res = await attempt();
    if (res === 'lease-gone') throw new UnavailableError(`create ${key}: etcd dropped the member lease twice`, { backend: BACKEND });
    if (!res.succeeded) throw new StoreConflictError('ALREADY_EXISTS', `${key} already exists`, { backend: BACKEND });
    // The txn's revision is the put's mod_revision.
    return { key, version: res.header.revision, record: decodeRecord(key, value) as LeaseRecord };
  }

  async update(key: RecordKey, record: LeaseRecord, version: string): Promise<StoredRecord> {
    const value = this.encode(record);
    const etcdKey = this.etcdKey(key);
    // A member key keeps the lease it was created with.
    const put: PutRequest = this.memberLease && key.startsWith('member/') ? { key: etcdKey, value, ignore_lease: true } : { key: etcdKey, value };
    const res = await this.compareAndSwap(`update ${key}`, key, etcdKey, version, { request_put: put });
    return { key, version: res.header.revision, record: decodeRecord(key, value) as LeaseRecord };
  }

  async delete(key: RecordKey, version: string): Promise<void> {
    const etcdKey = this.etcdKey(key);
    await this.compareAndSwap(`delete ${key}`, key, etcdKey, version, { request_delete_range: { key: etcdKey } });
  }

  /**
   * Proves this client may write `key` without writing it: a transaction whose
   * comparison never holds (create_revision < 0) with a put in its success
   * branch. etcd checks the permission of every branch before it compares.
   */
  async assertCanHold(key: RecordKey): Promise<void> {
    const etcdKey = this.etcdKey(key);
    await this.call(`hold ${key}`, etcdKey, () =>
      this.client.kv.txn({
        compare: [{ key: etcdKey, target: 'Create', result: 'Less', create_revision: 0 }],
        success: [{ request_put: { key: etcdKey, value: Buffer.alloc(0) } }],
        failure: [],
      }),
    );
  }

  async list(prefix: string): Promise<RecordList> {
    const etcdKey = this.etcdKey(prefix);
    const res = await this.call(`list ${prefix || '(all)'}`, etcdKey, () => this.client.kv.range({ key: etcdKey, range_end: prefixEnd(etcdKey) }));
    const list: RecordList = { records: [], corrupt: [], revision: res.header.revision };
    for (const kv of res.kvs) {
      const key = this.recordKey(kv.key);
      const record = decodeRecord(key, kv.value);
      if (record instanceof Error) list.corrupt.push({ key, version: kv.mod_revision, error: record });
      else list.records.push({ key, version: kv.mod_revision, record });
    }
    return list;
  }

  watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    const watch = new EtcdWatch(this, prefix, fromRevision, listener, () => this.watches.delete(watch));
    this.watches.add(watch);
    watch.start();
    return watch;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const watch of [...this.watches]) watch.fail(new UnavailableError('store closed', { backend: BACKEND }));
    await this.memberLease?.close(this.settings.requestTimeoutMs);
    this.client.close();
  }

  /** @internal */
  get isClosed(): boolean {
    return this.closed;
  }

  /** @internal */
  get etcdClient(): EtcdClientSlice {
    return this.client;
  }

  /** @internal */
  get watchCreateTimeoutMs(): number {
    return this.settings.requestTimeoutMs;
  }

  /** @internal */
  get log(): Logger {
    return this.logger;
  }

  /** @internal The etcd key of a record key. */
  etcdKey(key: RecordKey): Buffer {
    return Buffer.concat([this.base, Buffer.from(key, 'utf8')]);
  }

  /** @internal The record key of an etcd key under this store's prefix. */
  recordKey(etcdKey: Buffer): RecordKey {
    return etcdKey.subarray(this.base.length).toString('utf8');
  }

  /** @internal */
  fail(err: unknown, what: string, etcdKey: Buffer | string): RegistryError {
    const context: CallContext = { what, etcdKey: typeof etcdKey === 'string' ? etcdKey : etcdKey.toString('utf8'), username: this.settings.options.username };
    return toRegistryError(err, context);
  }

  private async call<T>(what: string, etcdKey: Buffer, run: () => Promise<T>): Promise<T> {
    if (this.closed) throw new UnavailableError(`${what}: store closed`, { backend: BACKEND });
    try {
      return await run();
    } catch (err) {
      throw this.fail(err, what, etcdKey);
    }
  }

  private async compareAndSwap(what: string, key: RecordKey, etcdKey: Buffer, version: string, op: RequestOp): Promise<TxnResponse> {
    const current = (kvs: KeyValue[] | undefined): never => {
      if (!kvs?.[0]) throw new StoreConflictError('NOT_FOUND', `${key} does not exist`, { backend: BACKEND });
      throw new StoreConflictError('CONFLICT', `${key} is at version ${kvs[0].mod_revision}, not ${String(version)}`, { backend: BACKEND });
    };
    // A version this store never handed out cannot match (and etcd would reject it as a revision).
    if (typeof version !== 'string' || !REVISION.test(version)) {
      return current((await this.call(what, etcdKey, () => this.client.kv.range({ key: etcdKey, keys_only: true }))).kvs);
    }
    const res = await this.call(what, etcdKey, () =>
      this.client.kv.txn({
        compare: [{ key: etcdKey, target: 'Mod', result: 'Equal', mod_revision: version }],
        success: [op],
        failure: [{ request_range: { key: etcdKey, keys_only: true } }],
      }),
    );
    if (res.succeeded) return res;
    return current(res.responses[0]?.response_range?.kvs);
  }

  private encode(record: LeaseRecord): Buffer {
    const size = payloadBytes(record.payload);
    if (size > this.maxPayloadBytes) {
      throw new InvalidArgumentError(`payload of ${size} bytes exceeds ${this.maxPayloadBytes} (registry.etcd.maxPayloadBytes)`, { backend: BACKEND, code: 'PAYLOAD_TOO_LARGE' });
    }
    return encodeRecord(record);
  }
}

/** One prefix watch on its own gRPC stream. It ends once, with `listener.error`, and never resumes by itself: core decides. */
class EtcdWatch implements WatchSubscription {
  private stream: WatchStream | undefined;
  private createTimer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(
    private readonly store: EtcdStore,
    private readonly prefix: string,
    private readonly fromRevision: string,
    private readonly listener: WatchListener,
    private readonly onDone: () => void,
  ) {}

  start(): void {
    const etcdKey = this.store.etcdKey(this.prefix);
    if (this.store.isClosed) return this.failSoon(new UnavailableError('store closed', { backend: BACKEND }));
    if (typeof this.fromRevision !== 'string' || !/^\d+$/.test(this.fromRevision)) {
      return this.failSoon(new RevisionTooOldError(`watch from ${JSON.stringify(this.fromRevision)}: not a revision this store handed out; relist`, { backend: BACKEND }));
    }
    const startRevision = (BigInt(this.fromRevision) + 1n).toString();
    this.createTimer = setTimeout(
      () => this.fail(new UnavailableError(`watch ${this.store.keyPrefix}${this.prefix}: not created within ${this.store.watchCreateTimeoutMs} ms`, { backend: BACKEND })),
      this.store.watchCreateTimeoutMs,
    );
    this.store.etcdClient.watchClient.watch().then(
      (stream) => {
        if (this.done) return void this.stop(stream);
        this.stream = stream;
        stream
          .on('data', (res) => this.onResponse(res))
          .on('error', (err) => this.fail(this.store.fail(err, `watch ${this.prefix || '(all)'}`, etcdKey)))
          .on('end', () => this.fail(new UnavailableError(`watch ${this.prefix || '(all)'}: the server ended the stream`, { backend: BACKEND })));
        stream.write({ create_request: { key: etcdKey, range_end: prefixEnd(etcdKey), start_revision: startRevision, progress_notify: true } });
      },
      (err: unknown) => this.fail(this.store.fail(err, `watch ${this.prefix || '(all)'}`, etcdKey)),
    );
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    this.cleanup();
  }

  /** Ends the watch with `error`, once. */
  fail(error: RegistryError): void {
    if (this.done) return;
    this.done = true;
    this.cleanup();
    this.store.log.debug({ backend: BACKEND, err: error, prefix: this.prefix }, '[rollcall] [etcd] watch ended');
    this.listener.error(error);
  }

  private failSoon(error: RegistryError): void {
    queueMicrotask(() => this.fail(error));
  }

  private onResponse(res: WatchResponse): void {
    if (this.done) return;
    if (res.canceled) {
      if (res.compact_revision && res.compact_revision !== '0') {
        return this.fail(new RevisionTooOldError(`watch from revision ${this.fromRevision}: compacted; the oldest revision kept is ${res.compact_revision}; relist`, { backend: BACKEND }));
      }
      if (!res.cancel_reason) return this.fail(new UnavailableError(`watch ${this.prefix || '(all)'}: the server canceled the watch`, { backend: BACKEND }));
      return this.fail(this.store.fail(etcd3.castGrpcErrorMessage(res.cancel_reason), `watch ${this.prefix || '(all)'}`, this.store.etcdKey(this.prefix)));
    }
    if (res.created) {
      clearTimeout(this.createTimer);
      // Established: tells core it sees again. At the start revision: the backlog after it is still on its way.
      return this.deliver({ type: 'progress', revision: this.fromRevision });
    }
    if (res.events.length === 0) return this.deliver({ type: 'progress', revision: res.header.revision });
    for (const ev of res.events) {
      if (this.done) return;
      const key = this.store.recordKey(ev.kv.key);
      const revision = ev.kv.mod_revision;
      if (ev.type === 'Delete') {
        this.deliver({ type: 'delete', key, revision });
        continue;
      }
      const record = decodeRecord(key, ev.kv.value);
      this.deliver(record instanceof Error ? { type: 'corrupt', entry: { key, version: revision, error: record }, revision } : { type: 'put', record: { key, version: revision, record }, revision });
    }
  }

  private deliver(event: WatchEvent): void {
    try {
      this.listener.event(event);
    } catch (err) {
      this.store.log.error({ backend: BACKEND, err }, '[rollcall] [etcd] a watch listener threw');
    }
  }

  private cleanup(): void {
    clearTimeout(this.createTimer);
    this.onDone();
    if (this.stream) this.stop(this.stream);
    this.stream = undefined;
  }

  private stop(stream: WatchStream): void {
    stream.removeAllListeners();
    // The cancellation's error must find a listener; end() first so etcd3 does not count it as a host failure.
    stream.on('error', () => {});
    stream.end();
    stream.cancel();
  }
}

/**
 * The one etcd lease member keys are bound to, granted on the first member
 * create and kept alive every third of its TTL. It only lets etcd clean up
 * after a stopped process: nothing in Rollcall waits for its loss, as core
 * enforces its own deadlines. A lease etcd dropped is forgotten; the next
 * member create (core re-announces a member whose key vanished) grants a new one.
 */
class MemberLease {
  private id: string | undefined;
  private granting: Promise<string> | undefined;
  private stream: KeepAliveStream | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly client: EtcdClientSlice,
    private readonly ttlSeconds: number,
    private readonly logger: Logger,
  ) {}

  current(): Promise<string> {
    if (this.closed) return Promise.reject(new UnavailableError('store closed', { backend: BACKEND }));
    if (this.id) return Promise.resolve(this.id);
    this.granting ??= this.client.leaseClient.leaseGrant({ TTL: this.ttlSeconds, ID: 0 }).then(
      (res) => {
        this.granting = undefined;
        this.id = res.ID;
        clearInterval(this.timer);
        this.timer = setInterval(() => this.keepAlive(), Math.max(500, (this.ttlSeconds * 1000) / 3));
        this.timer.unref();
        this.logger.debug({ backend: BACKEND, lease: res.ID, ttlSeconds: this.ttlSeconds }, '[rollcall] [etcd] member lease granted');
        return res.ID;
      },
      (err: unknown) => {
        this.granting = undefined;
        throw err;
      },
    );
    return this.granting;
  }

  invalidate(id: string): void {
    if (this.id !== id) return;
    this.logger.debug({ backend: BACKEND, lease: id }, '[rollcall] [etcd] member lease gone');
    this.id = undefined;
    clearInterval(this.timer);
    this.stopStream();
  }

  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.stopStream();
    const id = this.id;
    this.id = undefined;
    // Best effort: revoking deletes this process's member keys at once instead of after the TTL.
    if (id) await this.client.leaseClient.leaseRevoke({ ID: id }, { deadline: Date.now() + timeoutMs }).catch(() => {});
  }

  private keepAlive(): void {
    const id = this.id;
    if (!id || this.closed) return;
    const send = (stream: KeepAliveStream) => stream.write({ ID: id });
    if (this.stream) return void send(this.stream);
    this.client.leaseClient.leaseKeepAlive().then(
      (stream) => {
        if (this.closed || this.stream) return void stopKeepAlive(stream);
        this.stream = stream;
        const drop = () => {
          if (this.stream === stream) this.stream = undefined;
          stopKeepAlive(stream);
        };
        stream
          .on('data', (res) => {
            if (Number(res.TTL) <= 0) this.invalidate(res.ID);
          })
          .on('error', drop)
          .on('end', drop);
        send(stream);
      },
      // The next tick tries again; the lease outlives a few missed pings.
      () => {},
    );
  }

  private stopStream(): void {
    if (this.stream) stopKeepAlive(this.stream);
    this.stream = undefined;
  }
}

function stopKeepAlive(stream: KeepAliveStream): void {
  stream.removeAllListeners();
  stream.on('error', () => {});
  stream.end();
  stream.cancel();
}
