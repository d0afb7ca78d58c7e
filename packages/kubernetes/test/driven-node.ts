import { PatchStrategy, setHeaderOptions, V1MicroTime } from '@kubernetes/client-node';
import type { Admin } from './admin.js';

/**
 * A Node no kubelet (and no kwok) runs: the test plays its kubelet. It sends
 * heartbeats (renews the node's Lease in `kube-node-lease`, as a kubelet does)
 * until `loseNode()`, after which the node lifecycle controller of
 * kube-controller-manager, seeing no heartbeat for its
 * `--node-monitor-grace-period`, marks the node Unknown and its pods not Ready.
 */
export class DrivenNode {
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly admin: Admin,
    readonly name: string,
  ) {}

  /** Registers the node Ready and starts its heartbeats, one every `heartbeatMs` (a kubelet renews every 10 s of a 40 s lease). */
  static async start(admin: Admin, name: string, heartbeatMs = 2000): Promise<DrivenNode> {
    // Tainted: the scheduler places no other test's pod here (a pod bound by nodeName, as runPod's, ignores the taint).
    await admin.core.createNode({ body: { metadata: { name, labels: { 'kubernetes.io/hostname': name, type: 'driven' } }, spec: { taints: [{ key: 'rollcall.dev/driven', effect: 'NoSchedule' }] } } });
    const node = new DrivenNode(admin, name);
    const now = new Date();
    await admin.core.patchNodeStatus(
      {
        name,
        body: {
          status: {
            conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'the test plays this node\'s kubelet', lastHeartbeatTime: now, lastTransitionTime: now }],
            addresses: [{ type: 'InternalIP', address: '10.203.0.1' }],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    await admin.coordination.createNamespacedLease({
      namespace: 'kube-node-lease',
      body: { metadata: { name }, spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: new V1MicroTime() } },
    });
    const beat = () => {
      node.timer = setTimeout(() => {
        void admin.coordination
          .patchNamespacedLease({ name, namespace: 'kube-node-lease', body: { spec: { renewTime: new V1MicroTime() } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch))
          .catch(() => {})
          .finally(() => node.timer !== undefined && beat());
      }, heartbeatMs);
    };
    beat();
    return node;
  }

  /**
   * Starts a pod on this node and reports it Running and Ready, as its kubelet
   * would, at address `ip` (the endpoints controller lists only pods with one).
   * Resolves with its uid.
   */
  async runPod(namespace: string, name: string, labels: Record<string, string>, ip: string): Promise<string> {
    const created = await this.admin.core.createNamespacedPod({ namespace, body: { metadata: { name, labels }, spec: { nodeName: this.name, containers: [{ name: 'main', image: 'registry.invalid/worker:1' }] } } });
    const now = new Date();
    const condition = (type: string) => ({ type, status: 'True', lastTransitionTime: now });
    await this.admin.core.patchNamespacedPodStatus(
      {
        name,
        namespace,
        body: {
          status: {
            phase: 'Running',
            podIP: ip,
            podIPs: [{ ip }],
            hostIP: '10.203.0.1',
            startTime: now,
            conditions: [condition('PodScheduled'), condition('Initialized'), condition('ContainersReady'), condition('Ready')],
            containerStatuses: [{ name: 'main', image: 'registry.invalid/worker:1', imageID: '', ready: true, restartCount: 0, started: true, state: { running: { startedAt: now } } }],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    return created.metadata!.uid!;
  }

  /** Stops the heartbeats: from now on the node is lost to the control plane. Returns `performance.now()` when they stopped. */
  loseNode(): number {
    clearTimeout(this.timer);
    this.timer = undefined;
    return performance.now();
  }

  /** Stops the heartbeats and deletes the node and its Lease (the pod garbage collector then removes its pods). */
  async remove(): Promise<void> {
    this.loseNode();
    await this.admin.coordination.deleteNamespacedLease({ name: this.name, namespace: 'kube-node-lease' }).catch(() => {});
    await this.admin.core.deleteNode({ name: this.name }).catch(() => {});
  }
}
