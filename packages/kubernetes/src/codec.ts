import type { JsonValue } from '@rollcall/core';
import { type CorruptEntry, type LeaseRecord, parseCreatedAs, parseRecordLiveness, recordShapeProblem, type StoredRecord } from '@rollcall/core/spi';
import type { ObjectMeta } from '@rollcall/kube-client';
import { corrupt } from './errors.js';

export const CLUSTER_LABEL = 'rollcall.dev/cluster';
export const KIND_LABEL = 'rollcall.dev/kind';
export const ROLE_LABEL = 'rollcall.dev/role';
export const KEY_ANNOTATION = 'rollcall.dev/key';
export const PAYLOAD_ANNOTATION = 'rollcall.dev/payload';
/** A member record's liveness (`{"mode":"pod","podUid":...}`), as JSON. */
export const LIVENESS_ANNOTATION = 'rollcall.dev/liveness';
/** The creation a record continues from another store (`LeaseRecord.createdAs`: `@rollcall/migrate`'s `from:<created>`). */
export const CREATED_AS_ANNOTATION = 'rollcall.dev/created-as';
/** A member record's withdraw mark (`LeaseRecord.withdrawn`): `"true"`, or absent. */
export const WITHDRAWN_ANNOTATION = 'rollcall.dev/withdrawn';
/** A pod-mode member record's pod uid, as a label: an announce finds an earlier container's records with one selector, not a list of the role. */
export const POD_UID_LABEL = 'rollcall.dev/pod-uid';
/** The annotation older client-go and fabric8 keep their leader record in. */
export const LEADER_ANNOTATION = 'control-plane.alpha.kubernetes.io/leader';

/** The slice of coordination.k8s.io/v1 Lease Rollcall uses. */
export interface LeaseObject {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: ObjectMeta;
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number | null;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number | null;
  };
}

/** The slice of v1 ConfigMap the ConfigMap lock uses. */
export interface ConfigMapObject {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: ObjectMeta;
}

export type KubeObject = LeaseObject | ConfigMapObject;

/** The JSON older electors keep in LEADER_ANNOTATION; note `leaderTransitions`. */
interface LeaderElectionRecord {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaderTransitions?: number;
}

/**
 * A record's SPI version: the object's resourceVersion and uid. The uid makes a
 * PUT a true compare-and-set (the API server would otherwise create a deleted
 * Lease on PUT) and keeps a re-created object from matching an old version.
 */
export function recordVersion(meta: ObjectMeta): string {
  return `${meta.resourceVersion ?? ''}/${meta.uid ?? ''}`;
}

export function parseVersion(version: string): { resourceVersion: string; uid: string | undefined } {
  const slash = version.indexOf('/');
  return slash < 0 ? { resourceVersion: version, uid: undefined } : { resourceVersion: version.slice(0, slash), uid: version.slice(slash + 1) || undefined };
}

/** How one resource type holds a record. */
export interface ResourceCodec {
  /** Plural resource name, as in RBAC and URLs. */
  readonly plural: 'leases' | 'configmaps';
  /** `leases.coordination.k8s.io` or `configmaps`, for messages. */
  readonly resource: string;
  /** The collection path in a namespace. */
  collectionPath(namespace: string): string;
  encode(meta: ObjectMeta, record: LeaseRecord): KubeObject;
  /** Decodes an object that carries KEY_ANNOTATION; a bad value gives a corrupt entry, never a throw. */
  decode(object: KubeObject): StoredRecord | CorruptEntry | undefined;
}

/** The record fields as an object carries them, each possibly absent. */
type RecordFields = { [F in 'holderIdentity' | 'leaseDurationSeconds' | 'acquireTime' | 'renewTime' | 'leaseTransitions']?: LeaseRecord[F] | null };

/**
 * Decodes an object that carries KEY_ANNOTATION, the fields read by `fields`
 * (or the reason they cannot be); absent fields take the Lease defaults. A bad
 * value gives a corrupt entry, never a throw.
 */
function decodeObject(object: KubeObject, fields: () => RecordFields | string): StoredRecord | CorruptEntry | undefined {
  const key = object.metadata.annotations?.[KEY_ANNOTATION];
  if (!key) return undefined;
  const version = recordVersion(object.metadata);
  // The object's uid: set by the API server at create, immutable, never reused (a re-created object gets another).
  // Unique but unordered: creationTimestamp is second-grained and resourceVersion is opaque, so no order is claimed.
  const created = object.metadata.uid ?? '';
  const read = fields();
  if (typeof read === 'string') return { key, version, created, error: corrupt(key, read) };
  const raw = object.metadata.annotations?.[PAYLOAD_ANNOTATION];
  let payload: { payload?: JsonValue } = {};
  if (raw !== undefined) {
    try {
      payload = { payload: JSON.parse(raw) as JsonValue };
    } catch (err) {
      return { key, version, created, error: corrupt(key, `annotation ${PAYLOAD_ANNOTATION} is not JSON (${(err as Error).message})`) };
    }
  }
  const record: LeaseRecord = {
    holderIdentity: read.holderIdentity ?? '',
    leaseDurationSeconds: read.leaseDurationSeconds ?? 0,
    acquireTime: read.acquireTime ?? null,
    renewTime: read.renewTime ?? null,
    leaseTransitions: read.leaseTransitions ?? 0,
    ...payload,
  };
  // A value this version cannot read is read as absent: the reader's own mode, as for records written before it existed.
  const liveness = parseLiveness(object.metadata.annotations?.[LIVENESS_ANNOTATION]);
  if (liveness) record.liveness = liveness;
  const createdAs = parseCreatedAs(object.metadata.annotations?.[CREATED_AS_ANNOTATION]);
  if (createdAs) record.createdAs = createdAs;
  if (object.metadata.annotations?.[WITHDRAWN_ANNOTATION] === 'true') record.withdrawn = true;
  const problem = recordShapeProblem(record);
  return problem ? { key, version, created, error: corrupt(key, problem) } : { key, version, record, created };
}

function parseLiveness(raw: string | undefined): LeaseRecord['liveness'] {
  if (raw === undefined) return undefined;
  try {
    return parseRecordLiveness(JSON.parse(raw));
  } catch {
    return undefined;
  }
}

/** A label value: at most 63 characters of `[A-Za-z0-9-_.]`, alphanumeric at both ends. */
export const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** The value of POD_UID_LABEL for `record`: its pod's uid when it says one that can be a label value (a downward-API uid always can). */
export function podLabelOf(record: LeaseRecord): string | undefined {
  return record.liveness?.mode === 'pod' && LABEL_VALUE.test(record.liveness.podUid) ? record.liveness.podUid : undefined;
}

/** `labels` with POD_UID_LABEL saying the record's pod (none when it says no pod). */
export function withPodLabel(labels: Record<string, string> | undefined, record: LeaseRecord): Record<string, string> {
  const out = { ...labels };
  delete out[POD_UID_LABEL];
  const uid = podLabelOf(record);
  if (uid !== undefined) out[POD_UID_LABEL] = uid;
  return out;
}

function withPayload(annotations: Record<string, string>, record: LeaseRecord): Record<string, string> {
  const out = { ...annotations };
  if (record.payload !== undefined) out[PAYLOAD_ANNOTATION] = JSON.stringify(record.payload);
  if (record.liveness !== undefined) out[LIVENESS_ANNOTATION] = JSON.stringify(record.liveness);
  if (record.createdAs !== undefined) out[CREATED_AS_ANNOTATION] = record.createdAs;
  else delete out[CREATED_AS_ANNOTATION];
  if (record.withdrawn === true) out[WITHDRAWN_ANNOTATION] = 'true';
  else delete out[WITHDRAWN_ANNOTATION];
  return out;
}

/** Records as coordination.k8s.io/v1 Leases, field for field as client-go's leaderelection writes them. */
export const leaseCodec: ResourceCodec = {
  plural: 'leases',
  resource: 'leases.coordination.k8s.io',
  collectionPath: (namespace) => `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
  encode(meta, record) {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { ...meta, labels: withPodLabel(meta.labels, record), annotations: withPayload(meta.annotations ?? {}, record) },
      spec: {
        holderIdentity: record.holderIdentity,
        leaseDurationSeconds: record.leaseDurationSeconds,
        acquireTime: record.acquireTime,
        renewTime: record.renewTime,
        leaseTransitions: record.leaseTransitions,
      },
    };
  },
  decode(object) {
    return decodeObject(object, () => {
      const spec = (object as LeaseObject).spec ?? {};
      return { holderIdentity: spec.holderIdentity, leaseDurationSeconds: spec.leaseDurationSeconds, acquireTime: spec.acquireTime, renewTime: spec.renewTime, leaseTransitions: spec.leaseTransitions };
    });
  },
};

/** Records as the ConfigMap leader annotation of older client-go and fabric8. */
export const configMapCodec: ResourceCodec = {
  plural: 'configmaps',
  resource: 'configmaps',
  collectionPath: (namespace) => `/api/v1/namespaces/${namespace}/configmaps`,
  encode(meta, record) {
    const leader: LeaderElectionRecord = {
      holderIdentity: record.holderIdentity,
      leaseDurationSeconds: record.leaseDurationSeconds,
      acquireTime: record.acquireTime,
      renewTime: record.renewTime,
      leaderTransitions: record.leaseTransitions,
    };
    return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...meta, labels: withPodLabel(meta.labels, record), annotations: withPayload({ ...meta.annotations, [LEADER_ANNOTATION]: JSON.stringify(leader) }, record) } };
  },
  decode(object) {
    return decodeObject(object, () => {
      const raw = object.metadata.annotations?.[LEADER_ANNOTATION];
      if (raw === undefined || raw === '') return {};
      try {
        const leader = JSON.parse(raw) as LeaderElectionRecord;
        return { ...leader, leaseTransitions: leader.leaderTransitions };
      } catch (err) {
        return `annotation ${LEADER_ANNOTATION} is not JSON (${(err as Error).message})`;
      }
    });
  },
};
