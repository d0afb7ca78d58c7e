import { mkdtempSync, rmSync } from 'node:fs';
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
