import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { testenvRoot, unitDir } from '../../../env/paths.js';

/**
 * Whether this instance runs a real node (a kubelet with containerd) beside kwok's fake
 * ones. Asked for with ROLLCALL_TESTENV_REAL_NODE=1 at `up`; remembered under the root
 * (so `status` and `down` without the variable still see the node's units) until `down`.
 */
export function realNodeEnabled(): boolean {
  return process.env.ROLLCALL_TESTENV_REAL_NODE === '1' || existsSync(realNodeMarker());
}

const realNodeMarker = () => join(testenvRoot(), 'real-node');

/** Remembers that this instance has a real node (see realNodeEnabled). */
export function rememberRealNode(): void {
  mkdirSync(testenvRoot(), { recursive: true });
  writeFileSync(realNodeMarker(), 'the control plane and a real node run in a network namespace of their own\n');
}

/** Forgets it again, once `down` stopped everything. */
export function forgetRealNode(): void {
  rmSync(realNodeMarker(), { force: true });
}

/** Everything of the node (containerd, kubelet, images, CNI) lives here. */
export const nodeDir = () => unitDir('kubernetes-node');

/** The real node's name; kwok's nodes are kwok-node-N. */
export const REAL_NODE_NAME = 'rollcall-node';

/** Label on the real node; a pod selects it with this nodeSelector. */
export const REAL_NODE_LABEL = { key: 'rollcall.dev/node', value: 'real' } as const;

/** Taint on the real node: only pods that tolerate it (tests that need a kubelet) land there. */
export const REAL_NODE_TAINT = { key: 'rollcall.dev/real-node', value: 'true', effect: 'NoSchedule' } as const;

/**
 * Addresses inside the instance's own network namespace. Every instance has its own
 * namespace, so they are the same in each and never reach the machine's network.
 */
export const NODE_IP = '10.200.0.1';
/** Pods' addresses (the CNI bridge's subnet); the bridge holds the first. */
export const POD_SUBNET = '10.201.0.0/24';
/** The `kubernetes` Service's ClusterIP (first address of SERVICE_CIDR): a pod's KUBERNETES_SERVICE_HOST. */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';
export const KUBERNETES_SERVICE_PORT = 443;

/**
 * A name derived from the root, unique per instance on this machine: the node's cgroup
 * root, so two instances' pods never share a cgroup.
 */
export function instanceId(): string {
  return createHash('sha256').update(testenvRoot()).digest('hex').slice(0, 8);
}

/** The kubelet's cgroup root (under every v1 controller's hierarchy). */
export const cgroupRoot = () => `/rollcall-${instanceId()}`;
