import { httpsRequest, type HttpResponse } from '../../process/http-probe.js';
import { TestenvError } from '../../env/errors.js';
import { CLIENTS, caCert, certOf, keyOf } from './pki.js';
import { apiServerUrl } from './layout.js';

/** One request to the API server as the cluster admin (client certificate). */
export function adminRequest(method: string, path: string, body?: unknown): Promise<HttpResponse> {
  return httpsRequest(`${apiServerUrl()}${path}`, {
    method,
    body,
    caFile: caCert(),
    certFile: certOf(CLIENTS.admin),
    keyFile: keyOf(CLIENTS.admin),
  });
}

/** Creates an object unless it exists (201 or 409 are both fine). */
export async function createIfAbsent(path: string, body: unknown): Promise<void> {
  const res = await adminRequest('POST', path, body);
  if (res.status !== 201 && res.status !== 200 && res.status !== 409) {
    throw new TestenvError(`POST ${path} answered ${res.status}: ${res.body.slice(0, 500)}`);
  }
}

/** GETs an object as JSON, or undefined on 404. */
export async function getJson<T>(path: string): Promise<T | undefined> {
  const res = await adminRequest('GET', path);
  if (res.status === 404) return undefined;
  if (res.status !== 200) throw new TestenvError(`GET ${path} answered ${res.status}: ${res.body.slice(0, 500)}`);
  return JSON.parse(res.body) as T;
}
