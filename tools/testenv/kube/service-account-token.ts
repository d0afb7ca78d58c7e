import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { httpsRequest } from '../process/http-probe.js';
import { requireTestEnv } from '../env/env-file.js';
import type { KubernetesEnv } from '../servers/kubernetes.js';
import { TestenvError } from '../env/errors.js';

function admin(kube: KubernetesEnv, method: string, path: string, body?: unknown) {
  return httpsRequest(`${kube.server}${path}`, { method, body, caFile: kube.caFile, certFile: kube.adminCertFile, keyFile: kube.adminKeyFile });
}

export interface MintTokenOptions {
  /** Token lifetime; the API server enforces a minimum of 600 s. */
  expirationSeconds?: number;
  audiences?: string[];
}

/**
 * Mints a token for a service account through the TokenRequest API (the way a kubelet
 * gets one for a pod), creating the service account first if it does not exist. The
 * token authenticates as system:serviceaccount:<namespace>:<name>, with only the RBAC
 * bindings that identity has.
 */
export async function mintServiceAccountToken(namespace: string, serviceAccount: string, options: MintTokenOptions = {}): Promise<string> {
  const kube = requireTestEnv('kubernetes');
  const created = await admin(kube, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: serviceAccount },
  });
  if (created.status !== 201 && created.status !== 409) {
    throw new TestenvError(`creating service account ${namespace}/${serviceAccount} answered ${created.status}: ${created.body.slice(0, 300)}`);
  }
  const res = await admin(kube, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: options.expirationSeconds ?? 3600, ...(options.audiences ? { audiences: options.audiences } : {}) },
  });
  if (res.status !== 201) {
    throw new TestenvError(`TokenRequest for ${namespace}/${serviceAccount} answered ${res.status}: ${res.body.slice(0, 300)}`);
  }
  const token = (JSON.parse(res.body) as { status?: { token?: string } }).status?.token;
  if (!token) throw new TestenvError(`TokenRequest for ${namespace}/${serviceAccount} returned no token`);
  return token;
}

/**
 * Writes a kubeconfig that authenticates with a freshly minted token of the service
 * account and returns its path, for clients that load kubeconfig files.
 */
export async function serviceAccountKubeconfig(namespace: string, serviceAccount: string, options: MintTokenOptions = {}): Promise<string> {
  const kube = requireTestEnv('kubernetes');
  const token = await mintServiceAccountToken(namespace, serviceAccount, options);
  const dir = join(kube.kubeconfig, '..', 'service-accounts');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${namespace}.${serviceAccount}.kubeconfig`);
  const user = `system:serviceaccount:${namespace}:${serviceAccount}`;
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'rollcall-testenv', cluster: { server: kube.server, 'certificate-authority': kube.caFile } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: user, context: { cluster: 'rollcall-testenv', user, namespace } }],
    'current-context': user,
  };
  writeFileSync(file, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  return file;
}

/** What the API server answered a raw request: the status code and the body as JSON (a Status on refusals). */
export interface RawAnswer {
  status: number;
  body: { message?: string; [field: string]: unknown };
}

/**
 * One request to the test API server as the identity of `kubeconfig` (one
 * {@link serviceAccountKubeconfig} wrote), with no client library in between:
 * what a holder of the token could send by hand.
 */
export async function requestAs(kubeconfig: string, method: string, path: string, body?: unknown, contentType?: string): Promise<RawAnswer> {
  const kube = requireTestEnv('kubernetes');
  const token = (JSON.parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: { token: string } }[] }).users[0]!.user.token;
  const res = await httpsRequest(`${kube.server}${path}`, { method, body, contentType, caFile: kube.caFile, bearerToken: token, timeoutMs: 10_000 });
  return { status: res.status, body: res.body ? (JSON.parse(res.body) as RawAnswer['body']) : {} };
}
