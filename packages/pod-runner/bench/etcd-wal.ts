/**
 * etcd bytes written, for the pod runner's benchmarks: the Kubernetes test
 * etcd's `etcd_disk_wal_write_bytes_total`, read from its client port's
 * /metrics, and a window's delta less what the control plane writes idle
 * (its leases, kwok's node heartbeats). The instance is the one
 * ROLLCALL_TESTENV_PORT_BASE names, as the test environment's helpers read it.
 */

/** The etcd client port's offset from the instance's port base (tools/testenv/servers/kubernetes/layout.ts). */
const ETCD_CLIENT_PORT_OFFSET = 579;

/** The test API server's etcd WAL bytes written so far. */
export async function walBytes(): Promise<number> {
  const port = Number(process.env.ROLLCALL_TESTENV_PORT_BASE ?? 21000) + ETCD_CLIENT_PORT_OFFSET;
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('etcd_disk_wal_write_bytes_total '));
  if (!line) throw new Error(`no etcd_disk_wal_write_bytes_total at 127.0.0.1:${port}/metrics`);
  return Number(line.split(' ')[1]);
}

/** The control plane's idle WAL rate, measured over `ms` (default 5 s) with nothing of ours running. Bytes per ms. */
export async function idleWalRate(ms = 5000): Promise<number> {
  const start = await walBytes();
  const from = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  return ((await walBytes()) - start) / (performance.now() - from);
}

/** A WAL window opened now: `close()` resolves with the bytes written since, less `idleRate` × its length. */
export async function walWindow(idleRate: number): Promise<{ close(): Promise<number> }> {
  const before = await walBytes();
  const from = performance.now();
  return { close: async () => (await walBytes()) - before - idleRate * (performance.now() - from) };
}
