import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRegistry, ErrorCode } from '@rollcall/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

describe('no kubeconfig anywhere', () => {
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'rollcall-home-'));
    vi.stubEnv('HOME', home);
    vi.stubEnv('KUBECONFIG', undefined);
    vi.stubEnv('KUBERNETES_SERVICE_HOST', undefined);
  });
  afterEach(() => {
    vi.unstubAllEnvs();
    rmSync(home, { recursive: true, force: true });
  });

  it('is INVALID_CONFIG naming registry.kubernetes.kubeconfig and every place tried, before anything is contacted', async () => {
    const err = await createRegistry({ type: 'kubernetes', cluster: 'orders' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.kubernetes.kubeconfig', backend: 'kubernetes' });
    const message = (err as Error).message;
    expect(message).toContain('KUBECONFIG (not set)');
    expect(message).toContain(`${join(home, '.kube', 'config')} (no such file)`);
    expect(message).toContain('the in-cluster service account (KUBERNETES_SERVICE_HOST not set');
    expect(message).toContain('Set registry.kubernetes.kubeconfig');
  });

  it('a KUBECONFIG naming a missing file is INVALID_CONFIG naming it', async () => {
    const missing = join(home, 'nope.yaml');
    vi.stubEnv('KUBECONFIG', missing);
    const err = await createRegistry({ type: 'kubernetes', cluster: 'orders' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.kubernetes.kubeconfig' });
    expect((err as Error).message).toContain(`KUBECONFIG=${missing}`);
  });
});

describe('a kubeconfig that skips verifying the API server', () => {
  it('is warned about once at connect, naming the risk', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-insecure-'));
    const path = join(dir, 'kubeconfig');
    // Port 1 on loopback: nothing answers, so the connect fails after the warning.
    writeFileSync(path, 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: not-a-real-token\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n');
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (_: unknown, message?: string) => void warnings.push(message ?? ''), error() {} };
    try {
      const err = await createRegistry({ type: 'kubernetes', cluster: 'orders', requestTimeoutMs: 1000, kubernetes: { kubeconfig: path, namespace: 'default' } }, { logger }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: ErrorCode.UNAVAILABLE });
      expect(warnings.filter((w) => w.includes('insecure-skip-tls-verify'))).toEqual([
        "[rollcall] [kubernetes] the kubeconfig's cluster sets insecure-skip-tls-verify: the API server's certificate is not verified, so anyone on the path can pose as it and read the credentials; give certificate-authority(-data) instead",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
