import type { GoComponent } from '../../install/go-components.js';

const componentBaseVersion = 'k8s.io/component-base/version';

/** kwok, the fake nodes' kubelet, from the module pinned in tools/go/kwok. */
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

/** kube-apiserver, kube-controller-manager and kube-scheduler, from the module pinned in tools/go/kubernetes. */
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
