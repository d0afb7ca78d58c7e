import type { ServerCounter } from '../scenarios/idle-requests.js';

const RECEIVED = /^grpc_server_msg_received_total\{([^}]*)\} (\d+(?:\.\d+)?(?:e[+-]?\d+)?)$/;

/**
 * etcd's Prometheus metrics at `<endpoint>/metrics`: gRPC messages received, by
 * method. A unary call is one message; on a stream (Watch, LeaseKeepAlive)
 * every request message counts. Reading them is plain HTTP, not gRPC, so it
 * counts nothing itself.
 */
export function etcdMetricsCounter(endpoint: string): ServerCounter {
  return {
    source: `etcd ${endpoint}/metrics, grpc_server_msg_received_total by method`,
    readCost: 0,
    async read() {
      const response = await fetch(`${endpoint}/metrics`, { signal: AbortSignal.timeout(10_000) });
      if (!response.ok) throw new Error(`GET ${endpoint}/metrics answered ${response.status}`);
      const byMethod: Record<string, number> = {};
      let total = 0;
      for (const line of (await response.text()).split('\n')) {
        const match = RECEIVED.exec(line);
        if (!match) continue;
        const method = /grpc_method="([^"]+)"/.exec(match[1]!)?.[1] ?? 'unknown';
        const n = Number(match[2]);
        byMethod[method] = (byMethod[method] ?? 0) + n;
        total += n;
      }
      return { total, byMethod };
    },
  };
}
