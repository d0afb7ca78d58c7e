import type { Registry } from '@rollcall/core';
import { registerRollcallMetrics, serveMetrics, type RollcallMetricsOptions } from '@rollcall/metrics';
import { collectDefaultMetrics, Registry as PromRegistry } from 'prom-client';
import { usageError } from './errors.js';

/** The `--metrics-port` flag of the long-running commands. */
export interface MetricsFlags {
  metricsPort?: string;
}

/** `--metrics-port` as a port number (0: any free port); undefined when not given. Checked before anything connects. */
export function metricsPort(flags: MetricsFlags): number | undefined {
  if (flags.metricsPort === undefined) return undefined;
  const port = Number(flags.metricsPort);
  if (!/^\d+$/.test(flags.metricsPort) || port > 65_535) throw usageError(`--metrics-port ${JSON.stringify(flags.metricsPort)}: expected a TCP port, 0 to 65535`, 'e.g. --metrics-port 9464, or 0 for any free port');
  return port;
}

/**
 * Serves `registry`'s metrics (and the process's: CPU, memory, event loop) at
 * `http://<any interface>:<port>/metrics` and says where on stderr; resolves
 * with the function that stops it. Rejects with a USAGE error when the port
 * cannot be bound.
 */
export async function serveRegistryMetrics(registry: Registry, port: number, options: RollcallMetricsOptions): Promise<() => Promise<void>> {
  const prom = new PromRegistry();
  collectDefaultMetrics({ register: prom });
  const metrics = registerRollcallMetrics(registry, prom, options);
  try {
    const server = await serveMetrics(prom, { port });
    process.stderr.write(`rollcall: metrics at http://localhost:${server.port}/metrics\n`);
    return async () => {
      metrics.close();
      await server.close();
    };
  } catch (err) {
    metrics.close();
    const code = (err as NodeJS.ErrnoException).code;
    throw usageError(`--metrics-port ${port}: cannot listen (${code ?? String(err)})`, code === 'EADDRINUSE' ? 'another process listens there: pick another port, or 0 for any free one' : undefined);
  }
}
