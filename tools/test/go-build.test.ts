import { describe, expect, it } from 'vitest';
import { GO_COMPONENTS } from '../testenv/catalog.js';
import { buildGroups, goBinaryName } from '../testenv/install/go-build.js';
import { ETCD } from '../testenv/servers/etcd/unit.js';
import { KUBELET, KUBERNETES, KWOK } from '../testenv/servers/kubernetes/components.js';

describe('the Go build groups', () => {
  it('builds the control plane and the kubelet with one go build, every other module apart, each component once', () => {
    const names = (groups: ReturnType<typeof buildGroups>) => groups.map((g) => g.map((c) => c.name));
    expect(names(buildGroups(GO_COMPONENTS))).toEqual([['etcd'], ['kwok'], ['kubernetes', 'kubelet']]);
    expect(names(buildGroups([KUBELET, ETCD, KUBERNETES, KUBELET]))).toEqual([['kubelet', 'kubernetes'], ['etcd']]);
    // other link flags: another build, even from the same module
    expect(names(buildGroups([KUBERNETES, { ...KUBELET, ldflags: () => [] }]))).toEqual([['kubernetes'], ['kubelet']]);
    expect(names(buildGroups([KWOK]))).toEqual([['kwok']]);
  });

  it("names each binary as go build -o <dir>/ does, a major-version suffix from v2 up skipped", () => {
    expect(goBinaryName('k8s.io/kubernetes/cmd/kube-apiserver')).toBe('kube-apiserver');
    expect(goBinaryName('go.etcd.io/etcd/server/v3')).toBe('server');
    expect(goBinaryName('go.etcd.io/etcd/etcdctl/v3')).toBe('etcdctl');
    expect(goBinaryName('example.com/tool/v10')).toBe('tool');
    expect(goBinaryName('example.com/tool/v1')).toBe('v1');
    expect(goBinaryName('example.com/v0')).toBe('v0');
    expect(goBinaryName('v2')).toBe('v2');
  });
});
