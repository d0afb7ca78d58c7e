import zookeeper from 'node-zookeeper-client';
import type { ACL, Client, Event, Stat } from 'node-zookeeper-client';
import { ConfigurationError, ErrorCode, InvalidArgumentError, type Logger, RegistryError, RevisionTooOldError, SchemaMismatchError, StoreConflictError } from '@rollcall/core';
import { assertPayloadSize, type LeaseRecord, type PluginContext, type RecordKey, type RecordList, type RecordStore, type StoredRecord, type StoreSessionState, type StoreSupports, type WatchListener, type WatchSubscription } from '@rollcall/core/spi';
import { decodeKey, decodeRecord, encodeKey, encodeRecord } from './codec.js';
import { ancestorAcls, recordAcls } from './acls.js';
import { BACKEND } from './errors.js';
import { parseConnectString, type ZookeeperOptions } from './options.js';
import { createdOf, RevisionJournal, versionOf, zxidOf } from './revisions.js';
import { ZkSession } from './client.js';
import { readZkTls, warnUnverifiedZkTls } from './tls-socket.js';
import { PrefixWatch, type NodeRead, type WatchHost } from './watch.js';

/** Largest payload kept in one record: below ZooKeeper's default 1 MiB znode limit (jute.maxbuffer), with room for the record's fields. */
export const ZOOKEEPER_MAX_PAYLOAD_BYTES = 1_000_000;

/**
 * Connects a session, checks the chroot, and creates `<root>/<cluster>` if
 * missing. Rejects INVALID_CONFIG when a server's TLS certificate does not
 * verify (naming the key to fix), UNAVAILABLE when no server answers within
 * `connectTimeoutMs`, INVALID_CONFIG for a chroot that does not exist,
 * PERMISSION_DENIED when the ACLs refuse this identity.
 */
export async function connectZookeeperStore({ cluster, options, logger, clock, requestTimeoutMs, readOnly }: PluginContext<ZookeeperOptions>): Promise<ZookeeperStore> {
  const parsed = parseConnectString(options.connectString);
  if ('problem' in parsed) throw new ConfigurationError(`registry.zookeeper.connectString: ${parsed.problem}`, { key: 'registry.zookeeper.connectString', backend: BACKEND });
  if (!readOnly && !options.auth && !options.openAcl) {
    throw new ConfigurationError(
      'registry.zookeeper.openAcl: without auth, the znodes this registry creates are open to anyone (world:anyone ALL: any client of the ensemble may change or delete them); give registry.zookeeper.auth.username and auth.password, or set registry.zookeeper.openAcl=true to accept that',
      { key: 'registry.zookeeper.openAcl', backend: BACKEND },
    );
  }
  const tls = readZkTls(options.tls);
  warnUnverifiedZkTls(logger, options.tls);
  const session = new ZkSession({
    connectString: options.connectString,
    tls,
    sessionTimeoutMs: options.sessionTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs,
    requestTimeoutMs,
    auth: options.auth,
    clock,
    logger,
    hostCount: parsed.hosts.length,
  });
  await session.start();
  const store = new ZookeeperStore(session, cluster, options.root, options, logger);
  try {
    await store.prepare(parsed.chroot, readOnly ?? false);
  } catch (err) {
    await session.close();
    throw err;
  }
  return store;
}

/** Data of the cluster znode: the layout of its children, so another layout is refused rather than misread. */
const LAYOUT = { rollcallLayout: 1 };

/**
 * The record store on ZooKeeper: each record is one persistent znode, a child
 * of `<root>/<cluster>` named by its percent-encoded key. Versions are the
 * znode's mzxid; compare-and-set checks it and then writes with the znode's
 * dataVersion; list and watch are built from child and data watches.
 */
export class ZookeeperStore implements RecordStore, WatchHost {
  readonly spiVersion = 1 as const;
  readonly backend = BACKEND;
  readonly maxPayloadBytes = ZOOKEEPER_MAX_PAYLOAD_BYTES;
  /** ZooKeeper's own session, reported; a watch's progress marked synced once caught up. */
  readonly supports: StoreSupports = { sessionState: true, syncedProgress: true, orderedCreation: true };
  readonly journal = new RevisionJournal();
  readonly logger: Logger;
  /** The cluster znode, relative to the chroot. */
  readonly clusterPath: string;
  private readonly acls: ACL[];
  private readonly watches = new Set<PrefixWatch>();
  private closed = false;
  // One function per kind for the whole store: the library keeps one registration per function and path, re-armed by every read.
  private readonly onChildEvent = (event: Event) => {
    if (event.getPath() === this.clusterPath) for (const w of [...this.watches]) w.childrenChanged();
  };
  private readonly onDataEvent = (event: Event) => {
    const key = this.keyOfPath(event.getPath());
    if (key === undefined) return;
    const deleted = event.getType() === zookeeper.Event.NODE_DELETED;
    for (const w of [...this.watches]) w.nodeChanged(key, deleted);
  };

  /** @internal Use {@link connectZookeeperStore}. */
  constructor(
    readonly session: ZkSession,
    readonly cluster: string,
    readonly root: string,
    private readonly options: ZookeeperOptions,
    logger: Logger,
  ) {
    this.logger = logger;
    this.clusterPath = `${root}/${cluster}`;
    this.acls = recordAcls(options);
    session.onDrop((error) => {
      for (const w of [...this.watches]) w.end(error);
    });
  }

  /** @internal Checks the chroot, creates `<root>/<cluster>` if missing (missing under `readOnly`: NOT_FOUND), and checks its layout. */
  async prepare(chroot: string | undefined, readOnly = false): Promise<void> {
    if (chroot !== undefined) {
      const stat = await this.exists('/', 'check the chroot');
      if (!stat) {
        throw new ConfigurationError(`registry.zookeeper.connectString: the chroot ${chroot} does not exist on the ZooKeeper server; create it first (zkCli.sh create ${chroot})`, {
          key: 'registry.zookeeper.connectString',
          backend: BACKEND,
        });
      }
    }
    if (readOnly && !(await this.exists(this.clusterPath, 'check the cluster znode'))) {
      throw new RegistryError(ErrorCode.NOT_FOUND, `${this.clusterPath} does not exist, so there is no registry to read (opened read-only, nothing was created); check registry.zookeeper.root and registry.cluster`, { backend: BACKEND });
    }
    // The root's ancestors let other identities add their own clusters; the cluster znode and its records carry this identity's ACL.
    if (!readOnly) await this.createPath();
    const data = await this.session.call<Buffer>('read the cluster znode', this.clusterPath, (c, done) => c.getData(this.clusterPath, (e, d) => done(e, d)), true);
    const layout = parseLayout(data);
    if (layout !== undefined && layout !== LAYOUT.rollcallLayout) {
      throw new SchemaMismatchError(`${this.clusterPath} holds records in layout ${JSON.stringify(layout)}, this version of @rollcall/zookeeper reads layout ${LAYOUT.rollcallLayout}`, { backend: BACKEND });
    }
  }

  private async createPath(): Promise<void> {
    const segments = this.root.slice(1).split('/');
    let path = '';
    for (const segment of segments) {
      path += `/${segment}`;
      await this.createIfMissing(path, Buffer.alloc(0), ancestorAcls(this.options));
    }
    await this.createIfMissing(this.clusterPath, Buffer.from(JSON.stringify(LAYOUT)), this.acls);
  }

  private async createIfMissing(path: string, data: Buffer, acls: ACL[]): Promise<void> {
    if (await this.exists(path, 'check')) return;
    try {
      await this.session.call<string>('create', path, (c, done) => c.create(path, data, acls, zookeeper.CreateMode.PERSISTENT, done));
    } catch (err) {
      if (!(err instanceof RegistryError && err.code === 'ALREADY_EXISTS')) throw err;
    }
  }

  private exists(path: string, what: string): Promise<Stat | undefined> {
    return this.session.call<Stat | undefined>(what, path, (c, done) => c.exists(path, (e, stat) => done(e, stat ?? undefined)), true);
  }

  private pathOf(key: RecordKey): string {
    if (typeof key !== 'string' || key === '') throw new InvalidArgumentError(`a record key must be a non-empty string, got ${JSON.stringify(key)}`, { backend: BACKEND });
    return `${this.clusterPath}/${encodeKey(key)}`;
  }

  private keyOfPath(path: string): RecordKey | undefined {
    if (!path.startsWith(`${this.clusterPath}/`)) return undefined;
    const name = path.slice(this.clusterPath.length + 1);
    return name.includes('/') ? undefined : decodeKey(name);
  }

  private encode(record: LeaseRecord): Buffer {
    assertPayloadSize(record.payload, this.maxPayloadBytes, BACKEND);
    return encodeRecord(record);
  }

  /** Reads one record's znode, optionally arming the store's data watch on it. */
  private readNode(key: RecordKey, watch: boolean): Promise<NodeRead> {
    const path = this.pathOf(key);
    return this.session
      .call<{ data: Buffer; stat: Stat }>('get', key, (c, done) => {
        const cb = (e: unknown, data: Buffer, stat: Stat) => done(e, { data, stat });
        if (watch) c.getData(path, this.onDataEvent, cb);
        else c.getData(path, cb);
      }, true)
      .then(
        ({ data, stat }): NodeRead => {
          const version = versionOf(stat.mzxid);
          const mzxid = zxidOf(stat.mzxid);
          const decoded = decodeRecord(key, data);
          const created = createdOf(stat.czxid);
          if (decoded instanceof RegistryError) return { kind: 'corrupt', entry: { key, version, error: decoded, created }, mzxid };
          return { kind: 'record', stored: { key, version, record: decoded, created }, mzxid };
        },
        (err: unknown): NodeRead => {
          if (err instanceof RegistryError && err.code === 'NOT_FOUND') return { kind: 'missing', key };
          throw err;
        },
      );
  }

  async get(key: RecordKey): Promise<StoredRecord | undefined> {
    const read = await this.readNode(key, false);
    if (read.kind === 'missing') return undefined;
    if (read.kind === 'corrupt') throw read.entry.error;
    return read.stored;
  }

  async create(key: RecordKey, record: LeaseRecord): Promise<StoredRecord> {
    const path = this.pathOf(key);
    const data = this.encode(record);
    const zxid = await this.session.call<Buffer | undefined>('create', key, (c, done) =>
      c.create(path, data, this.acls, zookeeper.CreateMode.PERSISTENT, (e) => {
        // The reply header's zxid is the create's own transaction: the new znode's czxid and mzxid.
        const header = e ? undefined : this.session.replyZxid(c);
        done(e, header && Buffer.from(header));
      }),
    );
    let version = zxid && zxidOf(zxid) > 0n ? versionOf(zxid) : undefined;
    let created = zxid && zxidOf(zxid) > 0n ? createdOf(zxid) : undefined;
    if (!version || !created) {
      const stat = await this.exists(path, 'create');
      if (!stat) throw new StoreConflictError('NOT_FOUND', `create ${key}: the record vanished right after it was created`, { backend: BACKEND });
      version = versionOf(stat.czxid);
      created = createdOf(stat.czxid);
    }
    return { key, version, record: decodeRecord(key, data) as LeaseRecord, created };
  }

  /** The znode's current dataVersion if its mzxid is still `version`; CONFLICT or NOT_FOUND otherwise. */
  private async expect(path: string, key: RecordKey, version: string, what: string): Promise<number> {
    const stat = await this.exists(path, what);
    if (!stat) throw new StoreConflictError('NOT_FOUND', `${what} ${key}: the record does not exist`, { backend: BACKEND });
    const current = versionOf(stat.mzxid);
    if (current !== version) throw new StoreConflictError('CONFLICT', `${what} ${key}: the record is at version ${current}, not ${String(version)}`, { backend: BACKEND });
    return stat.version;
  }

  async update(key: RecordKey, record: LeaseRecord, version: string): Promise<StoredRecord> {
    const path = this.pathOf(key);
    const data = this.encode(record);
    const dataVersion = await this.expect(path, key, version, 'update');
    const stat = await this.session.call<Stat>('update', key, (c, done) => c.setData(path, data, dataVersion, done));
    return { key, version: versionOf(stat.mzxid), record: decodeRecord(key, data) as LeaseRecord, created: createdOf(stat.czxid) };
  }

  async delete(key: RecordKey, version: string): Promise<void> {
    const path = this.pathOf(key);
    const dataVersion = await this.expect(path, key, version, 'delete');
    await this.session.call<void>('delete', key, (c, done) => c.remove(path, dataVersion, (e) => done(e)));
  }

  /** The record keys in the cluster and the cluster znode's pzxid (the zxid of the last child created or deleted). */
  async children(watch = true): Promise<{ keys: RecordKey[]; pzxid: bigint }> {
    const { names, stat } = await this.session.call<{ names: string[]; stat: Stat }>('list', undefined, (c, done) => {
      const cb = (e: unknown, names: string[], stat: Stat) => done(e, { names, stat });
      if (watch) c.getChildren(this.clusterPath, this.onChildEvent, cb);
      else c.getChildren(this.clusterPath, cb);
    }, true);
    const keys: RecordKey[] = [];
    for (const name of names) {
      const key = decodeKey(name);
      if (key === undefined) this.logger.debug({ backend: BACKEND, name }, '[rollcall] [zookeeper] ignoring a znode that is not a Rollcall record name');
      else keys.push(key);
    }
    return { keys, pzxid: zxidOf(stat?.pzxid) };
  }

  read(key: RecordKey): Promise<NodeRead> {
    return this.readNode(key, true);
  }

  detach(watch: PrefixWatch): void {
    this.watches.delete(watch);
  }

  async list(prefix: string): Promise<RecordList> {
    const { keys, pzxid } = await this.children(false);
    const reads = await Promise.all(keys.filter((k) => k.startsWith(prefix)).map((k) => this.readNode(k, false)));
    const list: RecordList = { records: [], corrupt: [], revision: '' };
    const versions = new Map<RecordKey, string>();
    let zxid = pzxid;
    for (const read of reads) {
      if (read.kind === 'missing') continue;
      if (read.mzxid > zxid) zxid = read.mzxid;
      if (read.kind === 'record') {
        list.records.push(read.stored);
        versions.set(read.stored.key, read.stored.version);
      } else {
        list.corrupt.push(read.entry);
        versions.set(read.entry.key, read.entry.version);
      }
    }
    list.revision = this.journal.root(prefix, versions, zxid).token;
    return list;
  }

  watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    const resolved = this.journal.resolve(fromRevision);
    const zxid = BigInt(`0x${/^[0-9a-f]{16}-/.test(fromRevision) ? fromRevision.slice(0, 16) : '0'}`);
    const known = new Map<RecordKey, string>();
    let position = resolved?.position;
    if (resolved) {
      for (const [key, version] of resolved.snapshot.versions) if (key.startsWith(prefix)) known.set(key, version);
      // A narrower watch starts its own chain, so its revisions never stand for keys it does not follow.
      if (resolved.snapshot.prefix !== prefix) position = this.journal.root(prefix, known, zxid).position;
    }
    const watch = new PrefixWatch(this, prefix, listener, known, position!, zxid, fromRevision);
    if (this.closed || !this.session.connected) {
      watch.end(new RegistryError('UNAVAILABLE', this.closed ? 'the store is closed' : 'not connected to ZooKeeper', { backend: BACKEND }));
      return watch;
    }
    if (!resolved || !prefix.startsWith(resolved.snapshot.prefix)) {
      // ZooKeeper keeps no history to replay: a revision this store did not hand out (or forgot) cannot be proven complete.
      watch.end(new RevisionTooOldError(`revision ${fromRevision} is not one this store can resume from${resolved ? ` for prefix ${JSON.stringify(prefix)}` : ''}; relist`, { backend: BACKEND }));
      return watch;
    }
    this.watches.add(watch);
    watch.begin();
    return watch;
  }

  onSessionState(listener: (state: StoreSessionState) => void): () => void {
    return this.session.onSessionState(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.session.close();
  }
}

/** The layout a cluster znode declares; undefined when it declares none (created by hand, or empty). */
function parseLayout(data: Buffer | undefined): unknown {
  if (!data || data.length === 0) return undefined;
  try {
    const value = JSON.parse(data.toString('utf8')) as { rollcallLayout?: unknown };
    return typeof value === 'object' && value !== null ? value.rollcallLayout : undefined;
  } catch {
    return undefined;
  }
}

