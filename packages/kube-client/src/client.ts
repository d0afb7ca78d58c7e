import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ConfigurationError, systemClock, type Clock } from '@rollcall/core';
import { BACKEND, statusError, transportError, type KubeStatus, type RequestContext } from './errors.js';
import { freshToken, rememberTokenFiles } from './token-files.js';

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * kubectl's defaults, in its order: the files of `KUBECONFIG`, else
 * `~/.kube/config`, else the in-cluster service account. None of them there is
 * INVALID_CONFIG listing what was tried (client-node would fall back to
 * http://localhost:8080 and fail later with a connection error).
 */
function loadDefaultKubeConfig(kc: KubeConfig): void {
  if (process.env.KUBECONFIG) return kc.loadFromDefault();
  const file = join(homedir(), '.kube', 'config');
  if (existsSync(file)) return kc.loadFromFile(file);
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const token = existsSync(SERVICE_ACCOUNT_TOKEN);
  if (host && token) return kc.loadFromCluster();
  const inCluster = !host && !token ? 'KUBERNETES_SERVICE_HOST not set and no token' : !host ? 'KUBERNETES_SERVICE_HOST not set' : 'no token';
  throw new ConfigurationError(
    `registry.kubernetes.kubeconfig: no kubeconfig found; tried KUBECONFIG (not set), ${file} (no such file), the in-cluster service account (${inCluster} at ${SERVICE_ACCOUNT_TOKEN}). Set registry.kubernetes.kubeconfig (REGISTRY_KUBERNETES_KUBECONFIG) or KUBECONFIG to a kubeconfig file, or run in a pod with a service account`,
    { key: 'registry.kubernetes.kubeconfig', backend: BACKEND },
  );
}

/** Which kubeconfig {@link loadKubeConfig} loads: `registry.kubernetes.kubeconfig` and `.context`, as the errors name them. */
export interface KubeConfigSource {
  /** A kubeconfig file. Default kubectl's: the files of `KUBECONFIG`, else `~/.kube/config`, else the in-cluster service account. */
  kubeconfig?: string;
  /** A context of that kubeconfig. Default its current context. */
  context?: string;
}

/** The kubeconfig to use: `kubeconfig` and `context` from the options, else kubectl's defaults (KUBECONFIG, ~/.kube/config, the in-cluster service account). */
export function loadKubeConfig(options: KubeConfigSource): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (options.kubeconfig) kc.loadFromFile(options.kubeconfig);
    else loadDefaultKubeConfig(kc);
  } catch (err) {
    if (err instanceof ConfigurationError) throw err;
    const what = options.kubeconfig ?? (process.env.KUBECONFIG ? `KUBECONFIG=${process.env.KUBECONFIG}` : 'the default kubeconfig');
    const yaml = yamlProblem(err);
    // A YAML error's message quotes up to six lines of the file (a token, a password): position and reason only, and no cause.
    if (yaml) throw new ConfigurationError(`registry.kubernetes.kubeconfig: cannot load ${what}: not valid YAML: ${yaml} (its text is not shown: it may hold secrets)`, { key: 'registry.kubernetes.kubeconfig', backend: BACKEND });
    throw new ConfigurationError(`registry.kubernetes.kubeconfig: cannot load ${what}: ${(err as Error).message}`, { key: 'registry.kubernetes.kubeconfig', backend: BACKEND, cause: err });
  }
  if (options.context) {
    if (!kc.getContextObject(options.context)) throw new ConfigurationError(`registry.kubernetes.context: no context ${JSON.stringify(options.context)} in the kubeconfig`, { key: 'registry.kubernetes.context', backend: BACKEND });
    kc.setCurrentContext(options.context);
  }
  if (!kc.getCurrentCluster()) throw new ConfigurationError('registry.kubernetes.kubeconfig: the kubeconfig has no current cluster', { key: 'registry.kubernetes.kubeconfig', backend: BACKEND });
  const defaultFile = join(homedir(), '.kube', 'config');
  const files = options.kubeconfig ? [options.kubeconfig] : process.env.KUBECONFIG ? process.env.KUBECONFIG.split(':').filter(Boolean) : existsSync(defaultFile) ? [defaultFile] : [];
  rememberTokenFiles(kc, files);
  return kc;
}

function sameMaterial(a: readonly (string | Buffer | undefined)[], b: readonly (string | Buffer | undefined)[]): boolean {
  return a.length === b.length && a.every((x, i) => {
    const y = b[i];
    if (x === y) return true;
    if (x === undefined || y === undefined || (typeof x === 'string' && typeof y === 'string')) return false;
    // a Buffer is compared in place; only a string beside a Buffer is encoded
    return (typeof x === 'string' ? Buffer.from(x) : x).equals(typeof y === 'string' ? Buffer.from(y) : y);
  });
}

/** js-yaml's reason and 1-based position of a YAMLException, without its snippet of the text; undefined for any other error. */
function yamlProblem(err: unknown): string | undefined {
  const e = err as { name?: unknown; reason?: unknown; mark?: { line?: unknown; column?: unknown } };
  if (e?.name !== 'YAMLException') return undefined;
  const reason = typeof e.reason === 'string' && e.reason !== '' ? e.reason : 'it does not parse';
  const { line, column } = e.mark ?? {};
  return typeof line === 'number' && typeof column === 'number' ? `${reason} at line ${line + 1}, column ${column + 1}` : reason;
}

/** The records' namespace: the option, else `POD_NAMESPACE`, else the service account's, else the kubeconfig context's, else `default`. */
export function resolveNamespace(namespace: string | undefined, kc: KubeConfig): string {
  if (namespace) return namespace;
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim();
  } catch {
    // not in a pod
  }
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
}

/** This package's version, from its manifest (one directory above src/ and dist/). */
const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * `rollcall/<version> (<identity>)`: what the API server's audit log and API
 * Priority and Fairness see as this client. Without an identity (a store opened
 * directly), core's default identity, `<hostname>-<pid>`.
 */
export function userAgent(identity: string | undefined): string {
  return `rollcall/${VERSION} (${identity ?? `${hostname()}-${process.pid}`})`;
}

/**
 * The largest answer body read, bytes (128 MiB): a page of 500 Leases at the
 * largest payload is about 128 MiB. Past it the request fails UNAVAILABLE
 * instead of growing the process's memory without end.
 */
export const MAX_RESPONSE_BYTES = 128 * 1024 * 1024;

/**
 * The longest line of a stream kept, UTF-16 code units (16 Mi): a watch event
 * longer than that ends the watch with an error; a log line longer than that
 * (a task printing without newlines) is passed on in pieces of this size.
 */
export const MAX_LINE_LENGTH = 16 * 1024 * 1024;

function timeoutError(ms: number): Error {
  return Object.assign(new Error(`no answer within ${ms} ms`), { code: 'ETIMEDOUT' });
}

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path and query, e.g. `/apis/coordination.k8s.io/v1/namespaces/prod/leases/x`. */
  path: string;
  body?: unknown;
  contentType?: string;
  context: RequestContext;
}

export interface StreamHandlers {
  /** Each line of the stream: its JSON value, or the text in `text` format. */
  line(value: unknown): void;
  /** The stream ended: `error` undefined when the server closed it cleanly. */
  end(error: Error | undefined): void;
}

/**
 * The few HTTP calls Rollcall makes to the API server, over one keep-alive
 * agent. Authentication comes from @kubernetes/client-node's KubeConfig
 * (kubeconfig files, in-cluster service accounts, exec plugins), applied to each
 * request so rotated tokens are picked up. Headers are never logged or put in an
 * error.
 */
export class ApiClient {
  private readonly url: URL;
  private readonly transport: typeof https | typeof http;
  private agent: http.Agent | undefined;
  /** The TLS material the agent was made with: the kubeconfig's files are read on every request, so a rotation shows here. */
  private agentMaterial: readonly (string | Buffer | undefined)[] = [];
  /** Agents of earlier TLS material: left to finish what runs on them, destroyed at close. */
  private readonly retired: http.Agent[] = [];

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly requestTimeoutMs: number,
    /** Sent as User-Agent on every request; see {@link userAgent}. */
    private readonly userAgent: string,
    /** Bounds each request, and is the time of the watches and informers over this client. Default the system clock. */
    readonly clock: Clock = systemClock,
  ) {
    const server = kubeConfig.getCurrentCluster()?.server;
    if (!server) throw new ConfigurationError('registry.kubernetes.kubeconfig: the kubeconfig has no current cluster', { key: 'registry.kubernetes.kubeconfig', backend: BACKEND });
    // Not echoed: a server URL may carry credentials.
    if (!URL.canParse(server)) throw new ConfigurationError("registry.kubernetes.kubeconfig: the current cluster's server is not a URL (expected https://host:port)", { key: 'registry.kubernetes.kubeconfig', backend: BACKEND });
    this.url = new URL(server);
    this.transport = this.url.protocol === 'http:' ? http : https;
  }

  /** The API server's address, for messages. */
  get server(): string {
    return this.url.origin;
  }

  /** Sends one request; resolves with the decoded body of a 2xx answer, rejects with a mapped RegistryError otherwise. */
  async request<T>(req: ApiRequest): Promise<T> {
    const options = await this.options(req.method, req.path, req.body === undefined ? undefined : req.contentType ?? 'application/json');
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    // Without a length, Node sends a DELETE body unframed and the server reads it as the next request.
    if (payload !== undefined) (options.headers as Record<string, string>)['Content-Length'] = String(Buffer.byteLength(payload));
    return new Promise((resolve, reject) => {
      // A deadline on the whole exchange: a socket's idle timeout misses a black-holed TLS handshake.
      const deadline = this.clock.setTimeout(() => request.destroy(timeoutError(this.requestTimeoutMs)), this.requestTimeoutMs);
      const request = this.transport.request(options, (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_RESPONSE_BYTES) return void request.destroy(Object.assign(new Error(`the answer is over ${MAX_RESPONSE_BYTES} bytes`), { code: 'ERESPONSETOOLARGE' }));
          chunks.push(c);
        });
        response.on('error', (err) => (deadline.cancel(), reject(transportError(err, req.context))));
        response.on('end', () => {
          deadline.cancel();
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = undefined;
          }
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(body as T);
          else reject(statusError(status, body as KubeStatus | undefined, req.context));
        });
      });
      request.on('error', (err) => (deadline.cancel(), reject(transportError(err, req.context))));
      request.end(payload);
    });
  }

  /**
   * Opens a streaming GET: a watch (`json`: each line parsed), or a pod's log
   * (`text`: each line as a string, blank ones included). Resolves once the
   * server answered 200; rejects with a mapped error otherwise (410 Gone
   * included). `abort()` ends it without calling `end`.
   */
  async stream(path: string, context: RequestContext, handlers: StreamHandlers, format: 'json' | 'text' = 'json'): Promise<{ abort(): void }> {
    const options = await this.options('GET', path, undefined, format === 'text' ? 'text/plain, application/json' : 'application/json');
    return new Promise((resolve, reject) => {
      let aborted = false;
      let buffered = '';
      // Until the answer's headers arrive; after that, silence is judged by the watch.
      const deadline = this.clock.setTimeout(() => request.destroy(timeoutError(this.requestTimeoutMs)), this.requestTimeoutMs);
      const request = this.transport.request(options, (response) => {
        deadline.cancel();
        const status = response.statusCode ?? 0;
        if (status !== 200) {
          const chunks: Buffer[] = [];
          response.on('data', (c: Buffer) => chunks.push(c));
          response.on('end', () => {
            let body: KubeStatus | undefined;
            try {
              body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as KubeStatus;
            } catch {
              body = undefined;
            }
            reject(statusError(status, body, context));
          });
          return;
        }
        resolve({
          abort: () => {
            aborted = true;
            request.destroy();
          },
        });
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          buffered += chunk;
          if (format === 'text') {
            // A line that never ends is passed on in pieces rather than held.
            while (buffered.length > MAX_LINE_LENGTH && buffered.indexOf('\n') < 0) {
              if (!aborted) handlers.line(buffered.slice(0, MAX_LINE_LENGTH));
              buffered = buffered.slice(MAX_LINE_LENGTH);
            }
          } else if (buffered.length > MAX_LINE_LENGTH && buffered.indexOf('\n') < 0) {
            if (!aborted) handlers.end(new Error(`a watch event over ${MAX_LINE_LENGTH} characters`));
            aborted = true;
            request.destroy();
            return;
          }
          let newline: number;
          while ((newline = buffered.indexOf('\n')) >= 0) {
            const raw = buffered.slice(0, newline);
            buffered = buffered.slice(newline + 1);
            if (format === 'text') {
              const text = raw.replace(/\r$/, '');
              for (let at = 0; at === 0 || at < text.length; at += MAX_LINE_LENGTH) if (!aborted) handlers.line(text.slice(at, at + MAX_LINE_LENGTH));
              continue;
            }
            const line = raw.trim();
            if (!line) continue;
            let value: unknown;
            try {
              value = JSON.parse(line);
            } catch (err) {
              if (!aborted) handlers.end(err as Error);
              aborted = true;
              request.destroy();
              return;
            }
            if (!aborted) handlers.line(value);
          }
        });
        response.on('end', () => {
          // a log's last line may have no newline
          if (format === 'text' && buffered && !aborted) handlers.line(buffered);
          buffered = '';
          if (!aborted) ((aborted = true), handlers.end(undefined));
        });
        response.on('error', (err) => aborted || ((aborted = true), handlers.end(err)));
        response.on('close', () => aborted || ((aborted = true), handlers.end(new Error('the watch connection closed'))));
      });
      request.on('error', (err) => {
        deadline.cancel();
        if (aborted) return;
        reject(transportError(err, context));
      });
      request.end();
    });
  }

  close(): void {
    this.agent?.destroy();
    this.retired.splice(0).forEach((agent) => agent.destroy());
  }

  private async options(method: string, path: string, contentType: string | undefined, accept = 'application/json'): Promise<https.RequestOptions> {
    const options: https.RequestOptions = {
      method,
      protocol: this.url.protocol,
      hostname: this.url.hostname,
      port: this.url.port,
      path: `${this.url.pathname.replace(/\/$/, '')}${path}`,
      headers: { Accept: accept, 'User-Agent': this.userAgent, ...(contentType ? { 'Content-Type': contentType } : {}) },
    };
    await this.kubeConfig.applyToHTTPSOptions(options);
    // A kubeconfig `token-file` is read now, not once at load: a rotated token is used from the next request.
    const token = freshToken(this.kubeConfig);
    if (token) (options.headers as Record<string, string>).Authorization = `Bearer ${token}`;
    // A rotated CA or client certificate (the files changed): new connections use it; open ones finish on the old agent.
    const material = [options.ca, options.cert, options.key].map((m) => (Array.isArray(m) ? m.join('\n') : (m as string | Buffer | undefined)));
    if (this.agent && !sameMaterial(material, this.agentMaterial)) {
      const old = this.agent;
      this.agent = undefined;
      this.retired.push(old);
      if (this.retired.length > 8) this.retired.shift()!.destroy();
      // Idle keep-alive sockets would be reused by nobody: close them now.
      for (const sockets of Object.values((old as unknown as { freeSockets: Record<string, { destroy(): void }[]> }).freeSockets ?? {})) sockets.forEach((socket) => socket.destroy());
    }
    this.agentMaterial = material;
    // One keep-alive agent with the same TLS material, instead of the new agent client-node makes per call.
    this.agent ??= new (this.transport === https ? https.Agent : http.Agent)({
      keepAlive: true,
      ca: options.ca,
      cert: options.cert,
      key: options.key,
      rejectUnauthorized: options.rejectUnauthorized,
      servername: options.servername,
    } as https.AgentOptions);
    options.agent = this.agent;
    return options;
  }
}
