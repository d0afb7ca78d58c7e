import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { goModuleDir } from './paths.js';

/** One Go-built component: its pinned module under tools/go/<module>, and what to build. */
export interface GoComponent {
  /** Cache name, e.g. "kubernetes"; binaries land in <cache>/<name>-<version>/. */
  name: string;
  /** Directory under tools/go that holds the pinning go.mod. */
  module: string;
  /** The module whose version names the cache entry. */
  versionOf: string;
  /** Package path → binary name. */
  binaries: Record<string, string>;
  /** Extra -ldflags (beyond -s -w), given the version. */
  ldflags?: (version: string) => string[];
  /** Files copied from the versioned module's source into the cache entry: source → target name. */
  moduleFiles?: Record<string, string[]>;
}

const componentBaseVersion = 'k8s.io/component-base/version';

export const ETCD: GoComponent = {
  name: 'etcd',
  module: 'etcd',
  versionOf: 'go.etcd.io/etcd/server/v3',
  binaries: { 'go.etcd.io/etcd/server/v3': 'etcd', 'go.etcd.io/etcd/etcdctl/v3': 'etcdctl' },
};

export const KWOK: GoComponent = {
  name: 'kwok',
  module: 'kwok',
  versionOf: 'sigs.k8s.io/kwok',
  binaries: { 'sigs.k8s.io/kwok/cmd/kwok': 'kwok' },
  // kwok needs Stage objects to drive node and pod lifecycle; kwokctl normally writes
  // these defaults, we take the same files from the pinned module.
  moduleFiles: {
    'stages.yaml': [
      'kustomize/stage/node/fast/node-initialize.yaml',
      'kustomize/stage/node/heartbeat/node-heartbeat.yaml',
      'kustomize/stage/pod/fast/pod-ready.yaml',
      'kustomize/stage/pod/fast/pod-complete.yaml',
      'kustomize/stage/pod/fast/pod-delete.yaml',
    ],
  },
};

export const KUBERNETES: GoComponent = {
  name: 'kubernetes',
  module: 'kubernetes',
  versionOf: 'k8s.io/kubernetes',
  binaries: {
    'k8s.io/kubernetes/cmd/kube-apiserver': 'kube-apiserver',
    'k8s.io/kubernetes/cmd/kube-controller-manager': 'kube-controller-manager',
    'k8s.io/kubernetes/cmd/kube-scheduler': 'kube-scheduler',
  },
  // without these the binaries report v0.0.0-master; clients and kwok read the version
  ldflags: (version) => {
    const [major, minor] = version.replace(/^v/, '').split('.');
    return [
      `-X ${componentBaseVersion}.gitVersion=${version}`,
      `-X ${componentBaseVersion}.gitMajor=${major}`,
      `-X ${componentBaseVersion}.gitMinor=${minor}`,
      `-X ${componentBaseVersion}.gitTreeState=clean`,
    ];
  },
};

/** The real node's kubelet, from the same module and version as the control plane; built only for an instance with a real node. */
export const KUBELET: GoComponent = {
  ...KUBERNETES,
  name: 'kubelet',
  binaries: { 'k8s.io/kubernetes/cmd/kubelet': 'kubelet' },
};

export const GO_COMPONENTS = [ETCD, KWOK, KUBERNETES, KUBELET] as const;

/** The version a component is pinned to, read from its go.mod (the single source of truth). */
export function componentVersion(component: GoComponent): string {
  const goMod = readFileSync(join(goModuleDir(component.module), 'go.mod'), 'utf8');
  const escaped = component.versionOf.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const match = goMod.match(new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, 'm'));
  if (!match?.[1]) throw new Error(`no version of ${component.versionOf} in tools/go/${component.module}/go.mod`);
  return match[1];
}
