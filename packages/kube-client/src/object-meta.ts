/** The slice of ObjectMeta Rollcall reads and writes. */
export interface ObjectMeta {
  name: string;
  uid?: string;
  namespace?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

/** An owner of an object: the pod that owns a member's records, so they go when it goes. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}
