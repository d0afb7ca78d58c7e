import { up } from '../testenv/index.js';
import type { BenchOptions } from './args.js';
import { BACKENDS } from './backends/index.js';
import { kubernetesBackend } from './backends/kubernetes.js';
import { ClientGoReference } from './client-go.js';
import type { BenchRow, IdleRequests, NotApplicable } from './results.js';
import { announceToAdded } from './scenarios/announce.js';
import { crashFailover } from './scenarios/failover.js';
import { gracefulHandover } from './scenarios/handover.js';
import { lockThroughput } from './scenarios/locks.js';
import type { BenchTarget, IdleProbe } from './target.js';

/** A row whose timed figures are in, and the probe that will count its idle requests. */
interface PendingRow {
  row: Omit<BenchRow, 'requests'>;
  idle: IdleProbe | NotApplicable;
}

async function timedFigures(name: string, target: BenchTarget, options: BenchOptions, progress: (line: string) => void): Promise<Omit<BenchRow, 'requests'>> {
  progress(`${name}: ${options.rounds} graceful handovers`);
  const handover = await gracefulHandover(target, options.rounds);
  progress(`${name}: ${options.failoverRounds} crash failovers`);
  const failover = await crashFailover(target, options.failoverRounds);
  progress(`${name}: ${options.rounds} announce → added`);
  const announce = await announceToAdded(target, options.rounds);
  progress(`${name}: locks among 10 contenders for ${options.lockSeconds} s`);
  const lock = await lockThroughput(target, options.lockSeconds);
  return { backend: name, handover, failover, announce, lock };
}

/**
 * Runs the benchmark: brings up the servers the backends need, measures each
 * backend's timed figures one backend after another (so they do not compete
 * for the machine), then counts every backend's idle requests at once (they
 * barely load it, and each server counts only its own clients).
 */
export async function runBenchmark(options: BenchOptions, progress: (line: string) => void): Promise<BenchRow[]> {
  const backends = options.backends.map((name) => BACKENDS[name]);
  const servers = [...new Set(backends.flatMap((b) => b.servers))];
  if (servers.length > 0) {
    progress(`bringing up ${servers.join(', ')}`);
    await up(servers);
  }
  const targets: BenchTarget[] = [];
  let reference: ClientGoReference | undefined;
  try {
    const pending: PendingRow[] = [];
    for (const backend of backends) {
      if (backend.name === 'kubernetes') {
        const target = await kubernetesBackend.prepare();
        targets.push(target);
        pending.push({ row: await timedFigures(backend.name, target, options, progress), idle: target.idle });
        progress('kubernetes (client-go): building the elector');
        reference = await ClientGoReference.start(target);
        progress(`kubernetes (client-go): ${options.rounds} graceful handovers`);
        const handover = await reference.gracefulHandover(options.rounds);
        progress(`kubernetes (client-go): ${options.failoverRounds} crash failovers`);
        const failover = await reference.crashFailover(options.failoverRounds);
        pending.push({
          row: { backend: 'kubernetes (client-go)', handover, failover, announce: { na: 'client-go has no membership' }, lock: { na: 'client-go has no lock API' } },
          idle: reference.idleProbe(),
        });
      } else {
        const target = await backend.prepare();
        targets.push(target);
        pending.push({ row: await timedFigures(backend.name, target, options, progress), idle: target.idle });
      }
    }
    progress(`idle requests: ${options.idleSeconds} s windows, every backend at once`);
    const requests = await Promise.all(
      pending.map(({ idle }): Promise<IdleRequests | NotApplicable> => ('na' in idle ? Promise.resolve(idle) : idle.measure(options.idleSeconds * 1000))),
    );
    return pending.map(({ row }, i) => ({ ...row, requests: requests[i]! }));
  } finally {
    reference?.stopAll();
    await Promise.allSettled(targets.map((t) => t.close()));
  }
}
