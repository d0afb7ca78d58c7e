import type { CorruptRecordError, RegistryError } from './errors.js';
import type { LeaseRecord } from './lease-record.js';

/**
 * A record key, relative to the store's cluster: `member/<role>/<id>`,
 * `election/<name>` or `lock/<name>`. See `record-key.ts`.
 */
export type RecordKey = string;

/** A record as stored, with the version a compare-and-set must name. */
export interface StoredRecord {
  key: RecordKey;
  /** Opaque version token: znode version, mod_revision, resourceVersion, row version. */
  version: string;
  record: LeaseRecord;
  /**
   * This key's creation: unique across the cluster's history, unchanged by
   * update, new on every create (also after a delete and re-create). Opaque,
   * except with `supports.orderedCreation`: then a decimal integer string, and
   * a later create has a larger one, across keys. etcd create_revision,
   * ZooKeeper czxid, the SQL row's created revision, Kubernetes metadata.uid.
   * The exception: a SQL row the release before incarnations inserted has no
   * created revision and reads as `legacy:<acquireTime>`, unique within its
   * key and unordered (docs/failover.md, the rolling update).
   */
  created: string;
}

/** A key whose stored value cannot be decoded. It still has a version, so it can be replaced by CAS. */
export interface CorruptEntry {
  key: RecordKey;
  version: string;
  error: CorruptRecordError;
  /** The key's creation (see {@link StoredRecord.created}), where the store can read it without the value. */
  created?: string;
}

/** A consistent snapshot of a prefix. */
export interface RecordList {
  records: StoredRecord[];
  corrupt: CorruptEntry[];
  /** The revision the snapshot was taken at; a watch from it misses nothing and repeats nothing. Opaque. */
  revision: string;
}

/** One change seen by a watch, in store order. */
export type WatchEvent =
  | { type: 'put'; record: StoredRecord; revision: string }
  | { type: 'delete'; key: RecordKey; revision: string }
  | { type: 'corrupt'; entry: CorruptEntry; revision: string }
  /**
   * Nothing changed under the prefix up to `revision` (a bookmark); lets a
   * resume skip ahead. A store should send one as soon as a watch is
   * established, so the cache knows it sees again. `synced`: the store has
   * confirmed it can serve the watch from its start revision (no
   * REVISION_TOO_OLD follows for it) and has delivered every change up to
   * `revision`; a store that knows no earlier than its first change or a
   * later bookmark leaves it out.
   */
  | { type: 'progress'; revision: string; synced?: boolean };

/**
 * What a list or watch is for. A hint: a store may use it to ask its server
 * for less, and may always return everything under the prefix.
 */
export interface ScopeOptions {
  /**
   * The caller reads only the record whose key is exactly `prefix` (it filters
   * the rest out itself): a store whose server selects one object by name
   * (Kubernetes, a field selector) can leave out `election/e10` when asked
   * for `election/e1`. Default false: every key under the prefix.
   */
  exact?: boolean;
}

/** Receives a watch's events. After `error`, the watch has ended and sends nothing more. */
export interface WatchListener {
  event(event: WatchEvent): void;
  /** The watch ended. `REVISION_TOO_OLD` means relist; any other code means resume from the last revision seen. */
  error(error: RegistryError): void;
}

export interface WatchSubscription {
  /** Ends the watch; no event is delivered after it returns. */
  close(): void;
}

/** Session state a backend with native sessions (ZooKeeper) reports on its own. */
export type StoreSessionState = 'connected' | 'suspended' | 'lost';

/**
 * What a store can do beyond the calls every store makes, declared as data
 * (abstract-level's `supports` manifest): core's modes, `rollcall doctor` and
 * the conformance suite read it, and none of them looks for methods. Each
 * capability declared `true` promises the member named beside it; one not
 * declared (absent or false) is one the store has not.
 */
export interface StoreSupports {
  /** `assertCanHold(key)`: refuses, before a campaign or lock wait starts, an identity that may not hold the record. */
  readonly holdCheck?: boolean;
  /** `onSessionState(listener)`: the backend has a session of its own (ZooKeeper) and reports it. */
  readonly sessionState?: boolean;
  /** `podReadiness` (a `PodReadinessSource`): which pods are Ready, for `registry.member.liveness=pod`. */
  readonly podReadiness?: boolean;
  /** `podMembers` (a `PodMemberListing`): one pod's member records of a role, without listing the role. */
  readonly podMemberListing?: boolean;
  /** `access` (an `AccessReview`): whether this identity holds a permission, for `rollcall doctor`. */
  readonly accessReview?: boolean;
  /** A behaviour, no member: a watch's progress is marked `synced` once it has caught up (see {@link WatchEvent}). */
  readonly syncedProgress?: boolean;
  /**
   * A behaviour, no member: `StoredRecord.created` is a decimal integer string
   * and orders creates across every key of the cluster (a later create has a
   * larger one). Without it, `created` is unique but says nothing of order.
   */
  readonly orderedCreation?: boolean;
}

/**
 * The backend SPI, version 1: a narrow, versioned record store for one cluster.
 * Everything else — elections, locks, liveness, caching — is built once in core
 * over these calls. Errors are RegistryErrors with the codes named below.
 */
export interface RecordStore {
  /** SPI version this store implements. */
  readonly spiVersion: 1;
  /** Backend name used in error messages: `memory`, `kubernetes`, `zookeeper`, ... */
  readonly backend: string;
  /** Largest payload, in bytes of UTF-8 JSON, the store can keep in one record. */
  readonly maxPayloadBytes: number;
  /** What this store can do beyond the calls below, and which of the optional members it has. `{}`: none. */
  readonly supports: StoreSupports;

  /** The record under `key`, or undefined. Throws CORRUPT_RECORD if it cannot be decoded. */
  get(key: RecordKey): Promise<StoredRecord | undefined>;
  /** Creates the record if absent; throws ALREADY_EXISTS otherwise. */
  create(key: RecordKey, record: LeaseRecord): Promise<StoredRecord>;
  /** Replaces the record if its version is still `version`; throws CONFLICT, or NOT_FOUND when it is gone. */
  update(key: RecordKey, record: LeaseRecord, version: string): Promise<StoredRecord>;
  /** Deletes the record if its version is still `version`; throws CONFLICT, or NOT_FOUND when it is gone. */
  delete(key: RecordKey, version: string): Promise<void>;
  /** Every record whose key starts with `prefix` (or, with `exact`, at least the one under exactly `prefix`), and the revision of that snapshot. */
  list(prefix: string, options?: ScopeOptions): Promise<RecordList>;
  /**
   * Changes under `prefix` after `fromRevision`, in order (with `exact`, at
   * least those of exactly `prefix`: the same `options` as the list the
   * revision came from). If the store no longer keeps that revision,
   * `listener.error` gets REVISION_TOO_OLD.
   */
  watch(prefix: string, fromRevision: string, listener: WatchListener, options?: ScopeOptions): WatchSubscription;
  /**
   * With `supports.holdCheck`: resolves if this client may hold (campaign for, lock) the record
   * under `key`, rejects with PERMISSION_DENIED naming what is missing otherwise.
   * Called once before a campaign or lock wait starts, so a refused identity
   * learns at once rather than when the current holder's lease runs out.
   */
  assertCanHold?(key: RecordKey): Promise<void>;
  /** With `supports.sessionState`: a backend with its own session reports it here; returns an unsubscribe function. */
  onSessionState?(listener: (state: StoreSessionState) => void): () => void;
  /** Releases connections. The store's records stay. */
  close(): Promise<void>;
}
