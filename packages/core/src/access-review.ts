import type { RecordStore } from './store.js';
import { supports } from './store-supports.js';

/** A permission as role-based access control names it: `update` `leases` in group `coordination.k8s.io`, `get` `pods` subresource `log`. */
export interface AccessPermission {
  verb: string;
  /** The API group; `''` for the core group. */
  group: string;
  resource: string;
  subresource?: string;
}

/**
 * An optional capability of a backend's store: whether this identity holds a
 * permission where the records live, as the platform's authorizer answers it
 * (on Kubernetes, a SelfSubjectAccessReview in the records' namespace). A store
 * that has it declares `supports.accessReview` and holds it as `access`;
 * `rollcall doctor` asks it for every permission a role needs.
 */
export interface AccessReview {
  /** Where the permissions are asked (the Kubernetes namespace), for messages. */
  readonly namespace: string;
  /** Whether this identity holds `permission`; rejects (UNAVAILABLE, …) when the authorizer could not be asked. */
  isAllowed(permission: AccessPermission): Promise<boolean>;
}

/** The store's access review (`supports.accessReview`), or undefined when its backend declares none. */
export function accessReviewOf(store: RecordStore): AccessReview | undefined {
  return supports(store, 'accessReview') ? (store as RecordStore & { access: AccessReview }).access : undefined;
}
