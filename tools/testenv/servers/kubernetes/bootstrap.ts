import { waitFor } from '@rollcall/conformance';
import { serverWait } from '../../process/server-wait.js';
import { unitLogFile } from '../../env/paths.js';
import { createIfAbsent, getJson } from './admin-client.js';
import { FAKE_NODES, KWOK_NODE_ANNOTATION, TEST_NAMESPACES } from './layout.js';

interface NodeStatus {
  status?: { conditions?: { type: string; status: string }[] };
}

/** Creates the test namespaces. */
export async function createTestNamespaces(): Promise<void> {
  for (const name of TEST_NAMESPACES) {
    await createIfAbsent('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  }
}

/** Waits until the controller manager has created each test namespace's "default" service account (pods need it). */
export async function waitForDefaultServiceAccounts(): Promise<void> {
  for (const ns of TEST_NAMESPACES) {
    await waitFor(async () => (await getJson(`/api/v1/namespaces/${ns}/serviceaccounts/default`)) !== undefined, 60_000, serverWait({ what: `service account ${ns}/default (created by kube-controller-manager)`, logFile: unitLogFile('kube-controller-manager') }));
  }
}

/** Creates the kwok-managed fake nodes and waits until kwok reports them Ready. */
export async function createFakeNodes(): Promise<void> {
  for (const name of FAKE_NODES) {
    await createIfAbsent('/api/v1/nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name,
        annotations: { [KWOK_NODE_ANNOTATION.key]: KWOK_NODE_ANNOTATION.value, 'node.alpha.kubernetes.io/ttl': '0' },
        labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
      },
      spec: {},
    });
  }
  for (const name of FAKE_NODES) {
    await waitFor(
      async () => {
        const node = await getJson<NodeStatus>(`/api/v1/nodes/${name}`);
        return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      },
      60_000,
      serverWait({ what: `fake node ${name} to be Ready (kwok)`, logFile: unitLogFile('kwok') }),
    );
  }
}
