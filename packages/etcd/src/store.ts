import etcd3 from 'etcd3';
import { type RegistryError, StoreConflictError, UnavailableError } from '@rollcall/core';
import { assertPayloadSize, type LeaseRecord, type PluginContext, type RecordKey, type RecordList, type RecordStore, type StoredRecord, type StoreSupports, type WatchListener, type WatchSubscription } from '@rollcall/core/spi';
import { createEtcdClient, proveConnection, type EtcdClientSlice, type KeyValue, type PutRequest, type RequestOp, type TxnResponse } from './client.js';
import { decodeRecord, encodeRecord, KeySpace, prefixEnd } from './codec.js';
import { BACKEND, toRegistryError } from './errors.js';
import { MemberLease } from './member-lease.js';
import type { EtcdOptions } from './options.js';
import { EtcdWatch, type EtcdWatchHost } from './watch.js';

const REVISION = /^[1-9]\d*$/;

/**
 * Connects an etcd record store: builds the client from the options and
 * proves it works within `dialTimeoutMs` (see {@link proveConnection}).
 */
export async function connectEtcdStore(context: PluginContext<EtcdOptions>): Promise<EtcdStore> {
  const { options, logger } = context;
  const client = createEtcdClient(options, context.requestTimeoutMs);
  const store = new EtcdStore(client, context);
  try {
    await proveConnection(client, store.keys.etcdKey(''), options, (err) => store.mapError(err, 'connect', store.keyPrefix), context.clock);
  } catch (err) {
    client.close();
    throw err;
  }
  logger.info({ backend: BACKEND, endpoints: options.endpoints, keyPrefix: store.keyPrefix, username: options.username }, '[rollcall] [etcd] connected');
  return store;
}

/**
 * The etcd record store: one key per record under `<prefix>/<cluster>/`;
 * create-if-absent is a transaction on `create_revision = 0`, updates and
 * deletes are transactions on `mod_revision`, which is also the record's
 * version (etcd revisions never repeat, across deletes and re-creates too).
 * `list` is one range read, its revision the response header's; `watch` is a
 * prefix watch from that revision + 1 (see {@link EtcdWatch}).
 */
export class EtcdStore implements RecordStore {
  readonly spiVersion = 1 as const;
  readonly backend = BACKEND;
  readonly maxPayloadBytes: number;
  /** etcd's role-based auth checked before a campaign; a watch's progress marked synced once caught up. */
  readonly supports: StoreSupports = { holdCheck: true, syncedProgress: true, orderedCreation: true };
  /** @internal Record keys as etcd keys. */
  readonly keys: KeySpace;
  private readonly watches = new Set<EtcdWatch>();
  private readonly memberLease: MemberLease | undefined;
  private readonly watchHost: EtcdWatchHost;
  private closed = false;

  constructor(
    private readonly client: EtcdClientSlice,
    private readonly context: PluginContext<EtcdOptions>,
  ) {
    const { options, cluster, logger } = context;
    this.keys = new KeySpace(options.prefix, cluster);
    this.maxPayloadBytes = options.maxPayloadBytes;
    if (options.memberLeaseSeconds > 0) this.memberLease = new MemberLease(client, options.memberLeaseSeconds, logger, context.clock);
    this.watchHost = {
      client,
      keys: this.keys,
      logger,
      clock: context.clock,
      createTimeoutMs: context.requestTimeoutMs,
      isClosed: () => this.closed,
      mapError: (err, what, etcdKey) => this.mapError(err, what, etcdKey),
    };
  }

  /** `<prefix>/<cluster>/`: the etcd key prefix of this store's records. */
  get keyPrefix(): string {
    return this.keys.keyPrefix;
  }

  async get(key: RecordKey): Promise<StoredRecord | undefined> {
    const etcdKey = this.keys.etcdKey(key);
    const res = await this.call(`get ${key}`, etcdKey, () => this.client.kv.range({ key: etcdKey }));
    const kv = res.kvs[0];
    if (!kv) return undefined;
    const record = decodeRecord(key, kv.value);
    if (record instanceof Error) throw record;
    return { key, version: kv.mod_revision, record, created: kv.create_revision };
  }

  async create(key: RecordKey, record: LeaseRecord): Promise<StoredRecord> {
    const value = this.encode(record);
    const etcdKey = this.keys.etcdKey(key);
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
    // The txn's revision is the put's mod_revision, and (a create) its create_revision.
    return { key, version: res.header.revision, record: decodeRecord(key, value) as LeaseRecord, created: res.header.revision };
  }

  async update(key: RecordKey, record: LeaseRecord, version: string): Promise<StoredRecord> {
    const value = this.encode(record);
    const etcdKey = this.keys.etcdKey(key);
    // A member key keeps the lease it was created with.
    const put: PutRequest = this.memberLease && key.startsWith('member/') ? { key: etcdKey, value, ignore_lease: true } : { key: etcdKey, value };
    // The same transaction reads the key back after the put: its create_revision, in the one round trip.
    const res = await this.compareAndSwap(`update ${key}`, key, etcdKey, version, { request_put: put }, { request_range: { key: etcdKey, keys_only: true } });
    const created = res.responses[1]?.response_range?.kvs?.[0]?.create_revision;
    if (!created) throw new UnavailableError(`update ${key}: the transaction's read-back returned no create_revision`, { backend: BACKEND });
    return { key, version: res.header.revision, record: decodeRecord(key, value) as LeaseRecord, created };
  }

  async delete(key: RecordKey, version: string): Promise<void> {
    const etcdKey = this.keys.etcdKey(key);
    await this.compareAndSwap(`delete ${key}`, key, etcdKey, version, { request_delete_range: { key: etcdKey } });
  }

  /**
   * Proves this client may write `key` without writing it: a transaction whose
   * comparison never holds (create_revision < 0) with a put in its success
   * branch. etcd checks the permission of every branch before it compares.
   */
  async assertCanHold(key: RecordKey): Promise<void> {
    const etcdKey = this.keys.etcdKey(key);
    await this.call(`hold ${key}`, etcdKey, () =>
      this.client.kv.txn({
        compare: [{ key: etcdKey, target: 'Create', result: 'Less', create_revision: 0 }],
        success: [{ request_put: { key: etcdKey, value: Buffer.alloc(0) } }],
        failure: [],
      }),
    );
  }

  async list(prefix: string): Promise<RecordList> {
    const etcdKey = this.keys.etcdKey(prefix);
    const res = await this.call(`list ${prefix || '(all)'}`, etcdKey, () => this.client.kv.range({ key: etcdKey, range_end: prefixEnd(etcdKey) }));
    const list: RecordList = { records: [], corrupt: [], revision: res.header.revision };
    for (const kv of res.kvs) {
      const key = this.keys.recordKey(kv.key);
      const record = decodeRecord(key, kv.value);
      if (record instanceof Error) list.corrupt.push({ key, version: kv.mod_revision, error: record, created: kv.create_revision });
      else list.records.push({ key, version: kv.mod_revision, record, created: kv.create_revision });
    }
    return list;
  }

  watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    const watch = new EtcdWatch(this.watchHost, prefix, fromRevision, listener, () => this.watches.delete(watch));
    this.watches.add(watch);
    watch.start();
    return watch;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const watch of [...this.watches]) watch.fail(new UnavailableError('store closed', { backend: BACKEND }));
    await this.memberLease?.close(this.context.requestTimeoutMs);
    this.client.close();
  }

  /** @internal Maps a native error of call `what` on `etcdKey`. */
  mapError(err: unknown, what: string, etcdKey: Buffer | string): RegistryError {
    return toRegistryError(err, { what, etcdKey: typeof etcdKey === 'string' ? etcdKey : etcdKey.toString('utf8'), username: this.context.options.username });
  }

  private async call<T>(what: string, etcdKey: Buffer, run: () => Promise<T>): Promise<T> {
    if (this.closed) throw new UnavailableError(`${what}: store closed`, { backend: BACKEND });
    try {
      return await run();
    } catch (err) {
      throw this.mapError(err, what, etcdKey);
    }
  }

  private async compareAndSwap(what: string, key: RecordKey, etcdKey: Buffer, version: string, ...ops: RequestOp[]): Promise<TxnResponse> {
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
        success: ops,
        failure: [{ request_range: { key: etcdKey, keys_only: true } }],
      }),
    );
    if (res.succeeded) return res;
    return current(res.responses[0]?.response_range?.kvs);
  }

  private encode(record: LeaseRecord): Buffer {
    assertPayloadSize(record.payload, this.maxPayloadBytes, BACKEND);
    return encodeRecord(record);
  }
}
