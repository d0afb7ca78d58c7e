import type { ScaleOptions } from './args.js';
import { MASTER_ROLE, WORKER_ROLE, type SimProcess } from './protocol.js';

/** Who runs where at one size N. */
export interface ClusterPlan {
  /** The simulated processes of each worker OS process, round-robin. */
  processes: SimProcess[][];
  /** The simulated processes of each OS process to be killed with SIGKILL. */
  crashes: SimProcess[][];
  masters: string[];
  /** Workers that stay up, where announce probes are made. */
  workers: string[];
  elections: string[];
}

/**
 * N members: `masters` masters, `crashes × crashMembers` workers in the
 * processes to be killed, the rest workers in the worker processes. Each
 * election's candidates are distinct workers that stay up, spread over them.
 */
export function planCluster(n: number, options: Pick<ScaleOptions, 'masters' | 'elections' | 'candidates' | 'processes' | 'crashes' | 'crashMembers'>): ClusterPlan {
  if (n === 0) return electionsOnly(options);
  const crashed = options.crashes * options.crashMembers;
  const workerCount = n - options.masters - crashed;
  if (workerCount < Math.max(1, options.elections > 0 ? options.candidates : 1)) {
    throw new Error(`N = ${n} leaves ${workerCount} workers beside ${options.masters} masters and ${crashed} to crash: too few for ${options.candidates} candidates per election`);
  }
  const masters = Array.from({ length: options.masters }, (_, i) => `master-${i}`);
  const workers = Array.from({ length: workerCount }, (_, i) => `worker-${i}`);
  const elections = Array.from({ length: options.elections }, (_, e) => `election-${e}`);
  const campaigns = new Map<string, string[]>();
  for (const [e, election] of elections.entries()) {
    for (let c = 0; c < options.candidates; c++) {
      const worker = workers[(e * options.candidates + c) % workerCount]!;
      campaigns.set(worker, [...(campaigns.get(worker) ?? []), election]);
    }
  }
  const processes: SimProcess[][] = Array.from({ length: options.processes }, () => []);
  const all: SimProcess[] = [
    ...masters.map((id) => ({ id, role: MASTER_ROLE, campaigns: [] }) as SimProcess),
    ...workers.map((id) => ({ id, role: WORKER_ROLE, campaigns: campaigns.get(id) ?? [] }) as SimProcess),
  ];
  for (const [i, sim] of all.entries()) processes[i % options.processes]!.push(sim);
  const crashes = Array.from({ length: options.crashes }, (_, j) =>
    Array.from({ length: options.crashMembers }, (_, i): SimProcess => ({ id: `crash-${j}-${i}`, role: WORKER_ROLE, campaigns: [] })),
  );
  return { processes, crashes, masters, workers, elections };
}

/**
 * N = 0, the baseline the members' costs are read against: each election's
 * candidates, each its own process in that one election as at N > 0, and
 * nothing else — no master, no member, no crash.
 */
function electionsOnly(options: Pick<ScaleOptions, 'elections' | 'candidates' | 'processes'>): ClusterPlan {
  const elections = Array.from({ length: options.elections }, (_, e) => `election-${e}`);
  const candidates = elections.flatMap((election, e) =>
    Array.from({ length: options.candidates }, (_, c): SimProcess => ({ id: `candidate-${e * options.candidates + c}`, role: WORKER_ROLE, campaigns: [election], member: false })),
  );
  const processes: SimProcess[][] = Array.from({ length: options.processes }, () => []);
  for (const [i, sim] of candidates.entries()) processes[i % options.processes]!.push(sim);
  return { processes, crashes: [], masters: [], workers: [], elections };
}
