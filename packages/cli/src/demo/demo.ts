import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isGiven, resolveCliConfig, type CliConfig, type ConfigFlags } from '../config.js';
import { usageError } from '../errors.js';
import { metricsPort, type MetricsFlags } from '../metrics.js';
import { watchCommand } from './hint.js';
import { DemoScenario } from './scenario.js';

export { fitFrame, fitLine, hintLines, memberTable, MIN_VIEW, summaryLines } from './frame.js';

export interface DemoFlags extends ConfigFlags, MetricsFlags {
  /** Election and member lease, milliseconds. */
  lease?: string;
}

/** A watch configuration left by an earlier demo is removed after this long. Milliseconds. */
const KEEP_WATCH_CONFIG_MS = 86_400_000;

/**
 * The directory the demo keeps for `rollcall watch`, one per user: the
 * embedded store (`demo.db`, each run its own cluster) and each run's watch
 * configuration, so the printed `watch` outlives the demo.
 */
export function demoHome(): string {
  return join(tmpdir(), `rollcall-${process.getuid?.() ?? 'demo'}`);
}

/**
 * `rollcall demo`: 3 masters campaigning for `scheduler` and 4 workers with
 * heartbeat payloads and items, each its own process, on the embedded sqlite
 * store (or any backend). It kills the leader, has one worker withdraw, one
 * crash and one pause past its lease; the leader fails each one's items over
 * once, and the paused one stops instead of running them when it resumes.
 * See {@link DemoScenario}.
 */
export async function demoCommand(flags: DemoFlags): Promise<number> {
  const leaseMs = flags.lease === undefined ? 3000 : Number(flags.lease);
  if (!Number.isInteger(leaseMs) || leaseMs < 1000 || leaseMs > 60_000) throw usageError(`--lease ${JSON.stringify(flags.lease)}: expected milliseconds, 1000 to 60000`);
  const port = metricsPort(flags);
  const cluster = `demo-${randomBytes(3).toString('hex')}`;
  const timings = {
    'registry.cluster': cluster,
    'registry.election.leaseDurationMs': leaseMs,
    'registry.election.renewDeadlineMs': Math.round((leaseMs * 2) / 3),
    'registry.election.retryPeriodMs': Math.round(leaseMs / 6),
    'registry.member.heartbeatIntervalMs': Math.max(250, Math.round(leaseMs / 3)),
    'registry.member.leaseDurationMs': leaseMs,
  };
  const home = demoHome();
  let config: CliConfig = await resolveCliConfig(flags, process.env, { 'registry.type': 'sqlite', ...timings });
  if (config.resolved.type === 'memory') throw usageError('the memory store lives inside one process and the demo runs seven: use the default (sqlite) or a server backend with --type', 'rollcall demo --type etcd -o registry.etcd.endpoints=http://127.0.0.1:2379');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  if (config.resolved.type === 'sqlite' && !isGiven(config.sources.get('registry.sqlite.path')?.source)) {
    config = await resolveCliConfig(flags, process.env, { 'registry.type': 'sqlite', ...timings, 'registry.sqlite.path': join(home, 'demo.db') });
  }
  forgetOldWatchConfigs(home);
  const watchConfig = join(home, `${cluster.slice('demo-'.length)}.json`);
  writeFileSync(watchConfig, JSON.stringify(config.flat), { mode: 0o600 });
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-demo-'));
  const r = config.resolved;
  const where = r.type === 'sqlite' ? `sqlite (${String(r.options.path)})` : r.type;
  try {
    return await new DemoScenario({ config, dir, where, leaseMs, watch: watchCommand(watchConfig), metricsPort: port }).run();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function forgetOldWatchConfigs(home: string): void {
  for (const name of readdirSync(home)) {
    if (!name.endsWith('.json')) continue;
    const file = join(home, name);
    try {
      if (Date.now() - statSync(file).mtimeMs > KEEP_WATCH_CONFIG_MS) rmSync(file, { force: true });
    } catch {
      // another demo removed it first
    }
  }
}
