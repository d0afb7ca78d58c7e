import { createServer, request, Agent, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Fenced } from './protocol.js';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';

/** One write as the resource decided it. */
export interface ResourceWrite {
  of: Fenced;
  token: number;
  /** The writing candidate and its incarnation. */
  writer: string;
  incarnation: number;
  /** When the writer read the token it sent (CLOCK_MONOTONIC ms, the writer's clock = ours). */
  readAt: number;
  /** When the resource decided. */
  decidedAt: number;
  accepted: boolean;
}

/** The body of a write. */
interface WriteRequest {
  of: Fenced;
  token: number;
  writer: string;
  incarnation: number;
  readAt: number;
}

/** What a resource's handler answers: 200 accepted, 409 refused. */
export interface JsonAnswer {
  status: 200 | 409;
  body: unknown;
}

/**
 * A small JSON-over-HTTP server for the candidates' resources: each request's
 * body is parsed and handed to `decide` with its path; its answer goes back.
 * Listens on 127.0.0.1, or on the unix socket `path` (for candidates in pods,
 * which reach no address of the host: the socket's directory is mounted into
 * them). Shared by the soak's {@link FencedResource} and the failover chaos's.
 */
export class JsonServer {
  private constructor(private readonly server: Server) {}

  static async start(decide: (path: string, body: unknown) => JsonAnswer, options: { path?: string } = {}): Promise<JsonServer> {
    const server = createServer((req, res) => JsonServer.handle(decide, req, res));
    await new Promise<void>((resolve) => (options.path ? server.listen(options.path, resolve) : server.listen(0, '127.0.0.1', resolve)));
    return new JsonServer(server);
  }

  /** `http://127.0.0.1:<port>`, or `unix:<path>`. */
  get url(): string {
    const address = this.server.address();
    return typeof address === 'string' ? `unix:${address}` : `http://127.0.0.1:${(address as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private static handle(decide: (path: string, body: unknown) => JsonAnswer, req: IncomingMessage, res: ServerResponse): void {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const answer = decide(req.url ?? '/', JSON.parse(body));
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
    });
  }
}

/**
 * A storage service guarded by fencing tokens, as the contract expects a
 * resource to use them: it accepts a write whose token is at least the highest
 * it has accepted, and rejects any other. The election and the lock each have
 * their own highest token. Every decision is kept for the verdict.
 */
export class FencedResource {
  readonly writes: ResourceWrite[] = [];
  private readonly highest: Record<Fenced, number> = { election: 0, lock: 0 };
  private server!: JsonServer;

  private constructor() {}

  /** Listens on 127.0.0.1, or on the unix socket `options.path` (see {@link JsonServer.start}). */
  static async start(options: { path?: string } = {}): Promise<FencedResource> {
    const resource = new FencedResource();
    resource.server = await JsonServer.start((_path, body) => resource.decide(body as WriteRequest), options);
    return resource;
  }

  /** `http://127.0.0.1:<port>`, or `unix:<path>`. */
  get url(): string {
    return this.server.url;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private decide(write: WriteRequest): JsonAnswer {
    const accepted = write.token >= this.highest[write.of];
    if (accepted) this.highest[write.of] = write.token;
    this.writes.push({ ...write, decidedAt: monotonicMs(), accepted });
    return { status: accepted ? 200 : 409, body: { highest: this.highest[write.of] } };
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: 2 });

/**
 * A candidate's request to a {@link JsonServer} (`url` as its `url` gives it,
 * `path` e.g. `/write`); resolves with the decision, or `failed` when the
 * resource did not answer within `timeoutMs`.
 */
export function postJson(url: string, path: string, body: unknown, timeoutMs: number): Promise<'accepted' | 'rejected' | 'failed'> {
  const target = url.startsWith('unix:') ? { socketPath: url.slice('unix:'.length), path } : new URL(`${url}${path}`);
  return new Promise((resolve) => {
    const req = request({ ...(target instanceof URL ? { host: target.hostname, port: target.port, path: target.pathname } : target), method: 'POST', agent, timeout: timeoutMs, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? 'accepted' : res.statusCode === 409 ? 'rejected' : 'failed'));
      res.on('error', () => resolve('failed'));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve('failed'));
    req.end(JSON.stringify(body));
  });
}

/** A candidate's write to the {@link FencedResource}; resolves with the decision, or `failed` when the resource did not answer within `timeoutMs`. */
export function writeFenced(url: string, write: WriteRequest, timeoutMs: number): Promise<'accepted' | 'rejected' | 'failed'> {
  return postJson(url, '/write', write, timeoutMs);
}
