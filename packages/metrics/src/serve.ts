import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry as PromRegistry } from 'prom-client';

/** Where `serveMetrics` listens. */
export interface ServeMetricsOptions {
  /** TCP port; 0 picks a free one (see `MetricsServer.port`). */
  port: number;
  /**
   * Address to bind. Default `127.0.0.1`: this host only, so nothing is
   * exposed by accident. In a pod scraped on its own IP, give `0.0.0.0` (or
   * `::`) by name.
   */
  host?: string;
}

/** A running /metrics endpoint. */
export interface MetricsServer {
  /** The port it listens on (the one picked when 0 was asked). */
  readonly port: number;
  /** Stops listening and ends open connections. */
  close(): Promise<void>;
}

/**
 * Serves `promRegistry` in Prometheus's text format at `GET /metrics`, for a
 * process that has no HTTP server of its own (the `rollcall` command); an
 * application that has one mounts `promRegistry.metrics()` there instead.
 * Resolves once listening; rejects when the port cannot be bound.
 */
export function serveMetrics(promRegistry: PromRegistry, options: ServeMetricsOptions): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    promRegistry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': promRegistry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`collecting metrics failed: ${err instanceof Error ? err.message : String(err)}\n`),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
