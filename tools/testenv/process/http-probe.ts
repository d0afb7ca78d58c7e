import { request } from 'node:https';
import { readFileSync } from 'node:fs';

export interface HttpsOptions {
  method?: string;
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  bearerToken?: string;
  body?: unknown;
  /** The body's media type; default `application/json` (a merge patch: `application/merge-patch+json`). */
  contentType?: string;
  /** Accept any server certificate (for component health ports with self-signed certs). */
  insecure?: boolean;
  timeoutMs?: number;
}

export interface HttpResponse {
  status: number;
  body: string;
}

/** One HTTPS request with optional client certificate, CA and bearer token. */
export function httpsRequest(url: string, options: HttpsOptions = {}): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        ca: options.caFile ? readFileSync(options.caFile) : undefined,
        cert: options.certFile ? readFileSync(options.certFile) : undefined,
        key: options.keyFile ? readFileSync(options.keyFile) : undefined,
        rejectUnauthorized: !options.insecure,
        timeout: options.timeoutMs ?? 5_000,
        headers: {
          accept: 'application/json',
          ...(payload ? { 'content-type': options.contentType ?? 'application/json' } : {}),
          ...(options.bearerToken ? { authorization: `Bearer ${options.bearerToken}` } : {}),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${options.method ?? 'GET'} ${url} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** True when a plain-HTTP GET answers 200 within the timeout. */
export async function httpOk(url: string, timeoutMs = 2_000): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  await res.arrayBuffer();
  return res.ok;
}
