import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { ConfigurationError, hasCode, InvalidArgumentError, type Logger, StoreConflictError } from '@rollcall/core';
import { assertPayloadSize, parseKey, type CorruptEntry, type LeaseRecord, type PluginContext, type RecordKey, type RecordList, type RecordStore, type ScopeOptions, type StoredRecord, type StoreSupports, type WatchListener, type WatchSubscription } from '@rollcall/core/spi';
import { ApiClient, BACKEND, loadKubeConfig, resolveNamespace, userAgent, type ObjectMeta, type OwnerReference, type RequestContext } from '@rollcall/kube-client';
import { CLUSTER_LABEL, configMapCodec, parseVersion, podLabelOf, POD_UID_LABEL, recordVersion, KEY_ANNOTATION, leaseCodec, LIVENESS_ANNOTATION, PAYLOAD_ANNOTATION, WITHDRAWN_ANNOTATION, type KubeObject, type ResourceCodec } from './codec.js';
import { objectName } from './object-names.js';
import { ShadowObjects } from './shadow-objects.js';
import type { KubernetesOptions } from './options.js';
import { KubernetesAccessReview } from './access-review.js';
import { EndpointReadiness } from './endpoint-readiness.js';
import { PodMembers } from './pod-members.js';
import { podOwner } from './pod-owner.js';
import { prefixSelector, recordLabels } from './selectors.js';
import { type RecordWatchSource, watchRecords } from './watch.js';

/** Annotations total at most 256 KiB per object; this leaves room for the rest of the metadata. */
const MAX_PAYLOAD_BYTES = 200 * 1024;
/** Changes on every write, so every write yields a new resourceVersion even when the record is the same. */
const WRITE_ANNOTATION = 'rollcall.dev/write';
const writeId = () => randomBytes(4).toString('hex');

export interface KubernetesStoreConfig {
  client: ApiClient;
  logger: Logger;
  cluster: string;
  namespace: string;
  /** Where election and lock records live. */
  lock: 'lease' | 'configmap';
  watchSilenceTimeoutMs: number;
  watchTimeoutSeconds: number;
  /** Owner of member Leases, when running in a pod. */
  podOwner: OwnerReference | undefined;
  /** Pod readiness for `registry.member.liveness=pod`: the Service template, this pod's uid, the announce bound. */
  pods: { serviceTemplate: string; podUid: string | undefined; servedTimeoutMs: number };
}

/**
 * Connects a KubernetesStore: loads the kubeconfig (or the in-cluster service
 * account), unless `kubeConfig` is given, and proves the namespace exists with
 * a dry-run create, so a wrong namespace fails here with a clear error rather
 * than at the first write (not under `readOnly`).
 */
export async function connectKubernetesStore(context: PluginContext<KubernetesOptions>, kubeConfig?: KubeConfig): Promise<KubernetesStore> {
  const { cluster, options, logger } = context;
  const kc = kubeConfig ?? loadKubeConfig(options);
  if (kc.getCurrentCluster()?.skipTLSVerify) {
    logger.warn({ backend: BACKEND }, "[rollcall] [kubernetes] the kubeconfig's cluster sets insecure-skip-tls-verify: the API server's certificate is not verified, so anyone on the path can pose as it and read the credentials; give certificate-authority(-data) instead");
  }
  const namespace = resolveNamespace(options.namespace, kc);
  const client = new ApiClient(kc, context.requestTimeoutMs, userAgent(context.identity), context.clock);
  const store = new KubernetesStore({
    client,
    logger,
    cluster,
    namespace,
    lock: options.lock,
    watchSilenceTimeoutMs: options.watchSilenceTimeoutMs,
    watchTimeoutSeconds: options.watchTimeoutSeconds,
    podOwner: podOwner(namespace, options),
    pods: { serviceTemplate: options.memberService, podUid: options.podUid ?? (process.env.POD_UID || undefined), servedTimeoutMs: options.memberServiceWaitMs },
  });
  // A registry that writes nothing makes no dry run either (an audit log counts it as a create): a wrong namespace then reads as empty.
  if (context.readOnly) return store;
  try {
    await client.request({
      method: 'POST',
      path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases?dryRun=All`,
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { generateName: `${cluster}-probe-`, labels: { [CLUSTER_LABEL]: cluster }, annotations: { [KEY_ANNOTATION]: 'probe/connect' } }, spec: {} },
      context: { verb: 'create', resource: 'leases.coordination.k8s.io', namespace },
    });
  } catch (err) {
    if (hasCode(err, 'NOT_FOUND')) {
      client.close();
      throw new ConfigurationError(`registry.kubernetes.namespace: namespace ${namespace} does not exist on ${client.server}`, { key: 'registry.kubernetes.namespace', backend: BACKEND, cause: err });
    }
    // A read-only identity may not create even in a dry run; the first list tells whether it may read.
    if (!hasCode(err, 'PERMISSION_DENIED')) {
      client.close();
      throw err;
    }
  }
  return store;
}

interface KubeList {
  metadata: { resourceVersion: string; continue?: string };
  items: KubeObject[];
}

/**
 * A member's record or, in the `reaper` liveness mode, its heartbeat record:
 * always a Lease, written by merge PATCH (so the announce-only Role, without
 * `update`, suffices), owned by the pod it runs in.
 */
function ofMember(key: RecordKey): boolean {
  return key.startsWith('member/') || key.startsWith('heartbeat/');
}

/**
 * The record store on the Kubernetes API: every record one object in the
 * namespace, labelled with the cluster and its kind. Elections and locks are
 * written with PUT carrying the resourceVersion, as client-go's elector does;
 * member heartbeats with a merge PATCH carrying it, so a Role without `update`
 * can announce but not campaign.
 */
export class KubernetesStore implements RecordStore {
  readonly spiVersion = 1 as const;
  readonly backend = BACKEND;
  readonly maxPayloadBytes = MAX_PAYLOAD_BYTES;
  readonly supports: StoreSupports = { holdCheck: true, podReadiness: true, podMemberListing: true, accessReview: true };
  private readonly codecs: readonly ResourceCodec[];
  /** Which pods are Ready, for `registry.member.liveness=pod`: the EndpointSlices of a Service per role. */
  readonly podReadiness: EndpointReadiness;
  /** A role's members of one pod, by label, for an announce in pod mode. */
  readonly podMembers: PodMembers;
  /** What this identity may do in the namespace: `rollcall doctor`'s questions, and the hold check. */
  readonly access: KubernetesAccessReview;
  /** The last election and lock objects seen, so a PUT keeps metadata others added without a GET first. */
  private readonly objects = new Map<string, KubeObject>();
  /** Decodes objects, skipping (and logging) those that claim a key whose object they are not. */
  private readonly shadows: ShadowObjects;
  private readonly watchSource: RecordWatchSource;

  constructor(private readonly config: KubernetesStoreConfig) {
    this.codecs = config.lock === 'configmap' ? [leaseCodec, configMapCodec] : [leaseCodec];
    const { client, logger, namespace, watchSilenceTimeoutMs, watchTimeoutSeconds, pods } = config;
    this.podReadiness = new EndpointReadiness({ client, logger, namespace, watchSilenceTimeoutMs, watchTimeoutSeconds, ...pods });
    this.podMembers = new PodMembers(config.cluster, (prefix, labelSelector, fieldSelector) => this.listSelected(prefix, labelSelector, fieldSelector));
    this.access = new KubernetesAccessReview(client, namespace);
    this.shadows = new ShadowObjects(logger, (key) => this.objectName(key), (key) => this.codecFor(key));
    this.watchSource = {
      client,
      logger,
      codecs: this.codecs,
      path: (codec) => this.path(codec),
      context: (verb, codec) => this.context(verb, codec),
      saw: (type, object) => (type === 'DELETED' ? this.objects.delete(object.metadata.name) : this.remember(object)),
      decode: (codec, object) => this.shadows.decode(codec, object),
      watchSilenceTimeoutMs,
      watchTimeoutSeconds,
    };
  }

  /** The namespace of every record. */
  get namespace(): string {
    return this.config.namespace;
  }

  /** The object name a key is stored under. */
  objectName(key: RecordKey): string {
    return objectName(this.config.cluster, key);
  }

  /** The resource a key is stored as: members and their heartbeat records are always Leases. */
  codecFor(key: RecordKey): ResourceCodec {
    return this.config.lock === 'configmap' && !ofMember(key) ? configMapCodec : leaseCodec;
  }

  private context(verb: string, codec: ResourceCodec, name?: string): RequestContext {
    return { verb, resource: codec.resource, namespace: this.config.namespace, name };
  }

  private path(codec: ResourceCodec, name?: string): string {
    const collection = codec.collectionPath(this.config.namespace);
    return name ? `${collection}/${name}` : collection;
  }

  async get(key: RecordKey): Promise<StoredRecord | undefined> {
    const codec = this.codecFor(key);
    const name = this.objectName(key);
    try {
      const object = await this.config.client.request<KubeObject>({ method: 'GET', path: this.path(codec, name), context: this.context('get', codec, name) });
      this.remember(object);
      const decoded = this.shadows.decode(codec, object);
      if (!decoded) return undefined;
      if ('error' in decoded) throw decoded.error;
      return decoded;
    } catch (err) {
      if (hasCode(err, 'NOT_FOUND')) return undefined;
      throw err;
    }
  }

  async create(key: RecordKey, record: LeaseRecord): Promise<StoredRecord> {
    assertPayloadSize(record.payload, MAX_PAYLOAD_BYTES, BACKEND);
    const codec = this.codecFor(key);
    const name = this.objectName(key);
    if (!ofMember(key)) await this.access.assertMayUpdate(codec);
    const meta = this.metadata(key, name);
    try {
      const created = await this.config.client.request<KubeObject>({ method: 'POST', path: this.path(codec), body: codec.encode(meta, record), context: this.context('create', codec, name) });
      return this.decoded(key, codec, created);
    } catch (err) {
      if (hasCode(err, 'ALREADY_EXISTS') && !ofMember(key)) await this.adoptForeign(key, codec, name);
      throw err;
    }
  }

  /**
   * An election Lease made by another elector (client-go, fabric8) lacks
   * Rollcall's labels, so no selector finds it. Label it, leaving its record
   * alone: the watch then brings it in and the algorithm treats it as any other.
   */
  private async adoptForeign(key: RecordKey, codec: ResourceCodec, name: string): Promise<void> {
    try {
      const existing = await this.config.client.request<KubeObject>({ method: 'GET', path: this.path(codec, name), context: this.context('get', codec, name) });
      const { labels = {}, annotations } = this.metadata(key, name);
      // Every label, not only the cluster's: the selectors find a record by its kind and role too.
      if (Object.entries(labels).every(([label, value]) => existing.metadata.labels?.[label] === value) && existing.metadata.annotations?.[KEY_ANNOTATION] === key) return;
      await this.config.client.request({
        method: 'PATCH',
        path: this.path(codec, name),
        body: { metadata: { resourceVersion: existing.metadata.resourceVersion, labels, annotations } },
        contentType: 'application/merge-patch+json',
        context: this.context('patch', codec, name),
      });
      this.config.logger.info({ name, key }, '[rollcall] [kubernetes] labelled a Lease made by another elector');
    } catch (err) {
      this.config.logger.debug({ err, name }, '[rollcall] [kubernetes] could not label a foreign Lease; retried at the next attempt');
    }
  }

  async update(key: RecordKey, record: LeaseRecord, version: string): Promise<StoredRecord> {
    assertPayloadSize(record.payload, MAX_PAYLOAD_BYTES, BACKEND);
    const codec = this.codecFor(key);
    const name = this.objectName(key);
    try {
      return await this.write(key, codec, name, record, version);
    } catch (err) {
      // A uid precondition fails with 409 also when the object is gone: tell the two apart.
      if (hasCode(err, 'CONFLICT') && !(await this.exists(codec, name))) throw new StoreConflictError('NOT_FOUND', `not found: update ${codec.resource} ${name} in namespace ${this.config.namespace}`, { backend: BACKEND, cause: err });
      throw err;
    }
  }

  private async exists(codec: ResourceCodec, name: string): Promise<boolean> {
    try {
      await this.config.client.request({ method: 'GET', path: this.path(codec, name), context: this.context('get', codec, name) });
      return true;
    } catch (err) {
      if (hasCode(err, 'NOT_FOUND')) return false;
      throw err;
    }
  }

  private async write(key: RecordKey, codec: ResourceCodec, name: string, record: LeaseRecord, version: string): Promise<StoredRecord> {
    if (ofMember(key)) {
      // A merge patch with resourceVersion is as optimistic as a PUT, and needs only `patch`.
      const full = codec.encode({ name }, record);
      const patch = {
        metadata: {
          resourceVersion: parseVersion(version).resourceVersion,
          labels: { [POD_UID_LABEL]: podLabelOf(record) ?? null },
          annotations: {
            [PAYLOAD_ANNOTATION]: record.payload === undefined ? null : JSON.stringify(record.payload),
            [LIVENESS_ANNOTATION]: record.liveness === undefined ? null : JSON.stringify(record.liveness),
            [WITHDRAWN_ANNOTATION]: record.withdrawn === true ? 'true' : null,
            [WRITE_ANNOTATION]: writeId(),
          },
        },
        spec: (full as { spec?: unknown }).spec,
      };
      const patched = await this.config.client.request<KubeObject>({ method: 'PATCH', path: this.path(codec, name), body: patch, contentType: 'application/merge-patch+json', context: this.context('patch', codec, name) });
      return this.decoded(key, codec, patched);
    }
    // PUT the whole object, as client-go's elector does, keeping metadata others added; no GET first.
    const known = this.objects.get(name);
    const meta: ObjectMeta = known && recordVersion(known.metadata) === version ? structuredClone(known.metadata) : this.metadata(key, name);
    const { resourceVersion, uid } = parseVersion(version);
    // The uid makes the PUT a compare-and-set on this very object: without it the API server would re-create a deleted Lease.
    meta.resourceVersion = resourceVersion;
    if (uid) meta.uid = uid;
    // An object that lost a label (edited by hand) is found by the selectors again from its next write.
    meta.labels = { ...meta.labels, ...recordLabels(this.config.cluster, key) };
    if (meta.annotations) delete meta.annotations[PAYLOAD_ANNOTATION];
    if (meta.annotations) delete meta.annotations[LIVENESS_ANNOTATION];
    meta.annotations = { ...meta.annotations, [WRITE_ANNOTATION]: writeId() };
    const replaced = await this.config.client.request<KubeObject>({ method: 'PUT', path: this.path(codec, name), body: codec.encode(meta, record), context: this.context('update', codec, name) });
    return this.decoded(key, codec, replaced);
  }

  /** Campaigning and locking need `update` on the record's resource: asked of the API server once per resource. */
  async assertCanHold(key: RecordKey): Promise<void> {
    await this.access.assertMayUpdate(this.codecFor(key));
  }

  async delete(key: RecordKey, version: string): Promise<void> {
    const codec = this.codecFor(key);
    const name = this.objectName(key);
    await this.config.client.request({
      method: 'DELETE',
      path: this.path(codec, name),
      body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: parseVersion(version) },
      context: this.context('delete', codec, name),
    });
  }

  /**
   * Lists and watches ask the API server for the objects under the prefix
   * (selectors.ts), so a process receives only what it reads; the prefix
   * filter on the decoded key stays the last word.
   */
  async list(prefix: string, options?: ScopeOptions): Promise<RecordList> {
    return this.listSelected(prefix, prefixSelector(this.config.cluster, prefix), this.nameSelector(prefix, options));
  }

  private async listSelected(prefix: string, labelSelector: string, fieldSelector: string | undefined): Promise<RecordList> {
    const records: StoredRecord[] = [];
    const corrupt: CorruptEntry[] = [];
    const versions: string[] = [];
    for (const codec of this.codecs) {
      let continueToken: string | undefined;
      let revision = '';
      do {
        const query = new URLSearchParams({ labelSelector, ...(fieldSelector ? { fieldSelector } : {}), limit: '500', ...(continueToken ? { continue: continueToken } : {}) });
        const page = await this.config.client.request<KubeList>({ method: 'GET', path: `${this.path(codec)}?${query}`, context: this.context('list', codec) });
        revision ||= page.metadata.resourceVersion;
        continueToken = page.metadata.continue || undefined;
        for (const item of page.items) {
          this.remember(item);
          const decoded = this.shadows.decode(codec, item);
          if (!decoded || !decoded.key.startsWith(prefix)) continue;
          if ('error' in decoded) corrupt.push(decoded);
          else records.push(decoded);
        }
      } while (continueToken);
      versions.push(revision);
    }
    return { records, corrupt, revision: versions.join(',') };
  }

  /** One object by name, when the caller reads exactly one record (`exact`): not every election for one. */
  private nameSelector(prefix: string, options: ScopeOptions | undefined): string | undefined {
    return options?.exact && parseKey(prefix) ? `metadata.name=${this.objectName(prefix)}` : undefined;
  }

  watch(prefix: string, fromRevision: string, listener: WatchListener, options?: ScopeOptions): WatchSubscription {
    return watchRecords(this.watchSource, { prefix, labelSelector: prefixSelector(this.config.cluster, prefix), fieldSelector: this.nameSelector(prefix, options) }, fromRevision, listener);
  }

  async close(): Promise<void> {
    this.config.client.close();
  }

  /** The metadata Rollcall gives a record's object. */
  private metadata(key: RecordKey, name: string): ObjectMeta {
    const meta: ObjectMeta = { name, namespace: this.config.namespace, labels: recordLabels(this.config.cluster, key), annotations: { [KEY_ANNOTATION]: key } };
    if (ofMember(key) && this.config.podOwner) meta.ownerReferences = [this.config.podOwner];
    return meta;
  }

  private remember(object: KubeObject): void {
    if (!ofMember(object.metadata.annotations?.[KEY_ANNOTATION] ?? '')) this.objects.set(object.metadata.name, object);
  }

  private decoded(key: RecordKey, codec: ResourceCodec, object: KubeObject): StoredRecord {
    this.remember(object);
    const decoded = this.shadows.decode(codec, object);
    if (!decoded || 'error' in decoded) throw decoded?.error ?? new InvalidArgumentError(`the API server returned ${key} without its key annotation`, { backend: BACKEND });
    return decoded;
  }
}
