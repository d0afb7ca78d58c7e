import { PermissionError } from '@rollcall/core';
import type { AccessPermission, AccessReview } from '@rollcall/core/spi';
import { BACKEND, type ApiClient } from '@rollcall/kube-client';
import type { ResourceCodec } from './codec.js';

/**
 * What this identity may do in the records' namespace, as the API server
 * answers a SelfSubjectAccessReview (which every authenticated identity may
 * create): `rollcall doctor` asks it per permission, and the store asks it
 * before anything is held.
 */
export class KubernetesAccessReview implements AccessReview {
  /** One answer per resource for the hold check: a refusal is final for this process, an error is asked again. */
  private readonly updateChecks = new Map<string, Promise<boolean>>();

  constructor(
    private readonly client: ApiClient,
    readonly namespace: string,
  ) {}

  async isAllowed(permission: AccessPermission): Promise<boolean> {
    const review = await this.client.request<{ status?: { allowed?: boolean } }>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { namespace: this.namespace, ...permission } } },
      context: { verb: 'create', resource: 'selfsubjectaccessreviews.authorization.k8s.io', namespace: this.namespace },
    });
    return review.status?.allowed === true;
  }

  /**
   * A Role that may create Leases (to announce) but not update them must not
   * win an election by creating its Lease first: before creating an election
   * or lock record, ask whether this identity may `update` it, and refuse with
   * PERMISSION_DENIED if not. Asked once per resource.
   */
  async assertMayUpdate(codec: ResourceCodec): Promise<void> {
    let check = this.updateChecks.get(codec.plural);
    if (!check) {
      check = this.isAllowed({ verb: 'update', group: codec.plural === 'leases' ? 'coordination.k8s.io' : '', resource: codec.plural });
      this.updateChecks.set(codec.plural, check);
      check.catch(() => this.updateChecks.delete(codec.plural));
    }
    if (!(await check)) {
      throw new PermissionError('PERMISSION_DENIED', `permission denied: cannot update ${codec.resource} in namespace ${this.namespace}, which campaigning and locking need (the rollcall-coordinator Role grants it)`, { backend: BACKEND });
    }
  }
}
