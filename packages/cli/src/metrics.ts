import type { Registry } from '@rollcall/core';
import { type ObservablePodRunner, registerPodRunnerMetrics, registerRollcallMetrics, serveMetrics, type RollcallMetricsOptions } from '@rollcall/metrics';
import { collectDefaultMetrics, Registry as PromRegistry } from 'prom-client';
import { usageError } from './errors.js';

/** The `--metrics-port` and `--metrics-host` flags of the long-running commands. */
export interface MetricsFlags {
  metricsPort?: string;
  /** Address the metrics endpoint binds. Default `127.0.0.1`; `0.0.0.0` to be scraped from elsewhere (a pod's IP). */
  metricsHost?: string;
}

/** `--metrics-host`, default this host only. */
export function metricsHost(flags: MetricsFlags): string {
  return flags.metricsHost ?? '127.0.0.1';
}

const urlHost = (host: string) => (host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host);

/** `--metrics-port` as a port number (0: any free port); undefined when not given. Checked before anything connects. */
export function metricsPort(flags: MetricsFlags): number | undefined {
  if (flags.metricsPort === undefined) return undefined;
  const port = Number(flags.metricsPort);
  if (!/^\d+$/.test(flags.metricsPort) || port > 65_535) throw usageError(`--metrics-port ${JSON.stringify(flags.metricsPort)}: expected a TCP port, 0 to 65535`, 'e.g. --metrics-port 9464, or 0 for any free port');
  return port;
}

/**
 * Serves `registry`'s metrics (and the process's: CPU, memory, event loop) at
 * `http://<host>:<port>/metrics` (`host` default 127.0.0.1) and says where on stderr; resolves
 * with the function that stops it. Rejects with a USAGE error when the port
 * cannot be bound.
 */
export async function serveRegistryMetrics(registry: Registry, port: number, options: RollcallMetricsOptions, host = '127.0.0.1'): Promise<() => Promise<void>> {
  const prom = new PromRegistry();
  collectDefaultMetrics({ register: prom });
  const metrics = registerRollcallMetrics(registry, prom, options);
  try {
    const server = await serveMetrics(prom, { port, host });
    process.stderr.write(`rollcall: metrics at http://${urlHost(host)}:${server.port}/metrics${host === '0.0.0.0' || host === '::' ? ' (every interface)' : ''}\n`);
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

/**
 * Serves a pod runner's metrics and its registry's (its election observed,
 * and the process's) at `http://127.0.0.1:<port>/metrics`; resolves with
 * the port it listens on and the function that stops it. The CLI is where
 * `@rollcall/metrics` and `@rollcall/pod-runner` meet: neither depends on the other.
 */
export async function serveRunnerMetrics(registry: Registry, runner: ObservablePodRunner, port: number): Promise<{ port: number; stop: () => Promise<void> }> {
  const prom = new PromRegistry();
  collectDefaultMetrics({ register: prom });
  const registryMetrics = registerRollcallMetrics(registry, prom, { elections: [`pod-runner-${runner.name}`] });
  const runnerMetrics = registerPodRunnerMetrics(runner, prom);
  const close = () => {
    runnerMetrics.close();
    registryMetrics.close();
  };
  try {
    const server = await serveMetrics(prom, { port });
    return {
      port: server.port,
      stop: async () => {
        close();
        await server.close();
      },
    };
  } catch (err) {
    close();
    throw err;
  }
}
