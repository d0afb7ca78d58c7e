import { DEFAULT_MEMBER_TIMING, resolveConfig, type MemberLiveness, type MemberTiming } from '@rollcall/core';

/** A member timing a scale run is given: heartbeat and lease (the renew deadline is core's default, ¾ of the lease). */
export type BenchMemberTiming = Pick<MemberTiming, 'heartbeatIntervalMs' | 'leaseDurationMs'>;

/** A member setting of a scale run: the liveness mode and the timing. */
export type BenchMember = { liveness: MemberLiveness } & BenchMemberTiming;

/** The liveness modes the simulation can run; `pod` gives each member a kwok pod, so it runs on Kubernetes only. */
const SIMULATED_LIVENESS: readonly MemberLiveness[] = ['heartbeat', 'reaper', 'pod'];
import { backendList, parseFlags, positive, UsageError, whole } from '../args.js';

/** The backends the scale benchmark runs: each has a server whose costs it reads. */
export const SCALE_BACKENDS = ['kubernetes', 'etcd', 'zookeeper'] as const;
export type ScaleBackend = (typeof SCALE_BACKENDS)[number];

/** What one scale run measures. */
export interface ScaleOptions {
  /** Backends, measured one after another at each size and printed side by side. Default kubernetes. */
  backends: ScaleBackend[];
  /**
   * Cluster sizes N: simulated processes, each one member with its own registry, connection and watch. Default 100, 300, 1000.
   * N = 0 is the elections-only baseline: the elections' candidates (elections × candidates processes) campaign, no member is announced or watched; run once per backend, whatever the liveness modes.
   */
  members: number[];
  /** Elections E, each with {@link candidates} candidates among the workers. Default 100. */
  elections: number;
  /** Candidates per election. Default 3. */
  candidates: number;
  /** Members in role `master`, each watching role `worker`; the rest are workers. Default 10. */
  masters: number;
  /** Length of the steady-state window, seconds; it lasts longer when a crash still waits for its removal. Default 60. */
  seconds: number;
  /** Worker OS processes hosting the simulated ones, round-robin. Default 4. */
  processes: number;
  /** Announces of a new worker member timed to every master's `added`, spread over the window. Default 20. */
  announces: number;
  /** Graceful handovers timed under the load, spread over the window. Default 10. */
  handovers: number;
  /** OS processes of {@link crashMembers} workers each, killed with SIGKILL during the window (part of N). Default 3. */
  crashes: number;
  /** Workers hosted by each crashed process. Default 4. */
  crashMembers: number;
  /**
   * `registry.member.liveness` of every simulated registry: each mode is measured in turn at each size and backend. Default heartbeat.
   * `pod` (Kubernetes only): each member runs in a kwok pod of its own behind its role's headless Service, and a crash turns its pods not Ready, then deletes them.
   */
  liveness: MemberLiveness[];
  /** Member heartbeat interval and lease of every simulated registry: each is measured in turn, in each liveness mode. Default core's, 5000 / 20000 ms. */
  memberTimings: BenchMemberTiming[];
  /** Where to write the results as JSON, for the plot and the README table. Default: nowhere. */
  json?: string;
}

/** `5000/20000`: a member timing as --member-timing takes it. */
export const timingLabel = (t: BenchMemberTiming) => `${t.heartbeatIntervalMs}/${t.leaseDurationMs}`;

/** True for core's default member timing. */
export const isDefaultTiming = (t: BenchMemberTiming) => t.heartbeatIntervalMs === DEFAULT_MEMBER_TIMING.heartbeatIntervalMs && t.leaseDurationMs === DEFAULT_MEMBER_TIMING.leaseDurationMs;

export const SCALE_DEFAULTS: Omit<ScaleOptions, 'json'> = {
  backends: ['kubernetes'],
  members: [100, 300, 1000],
  elections: 100,
  candidates: 3,
  masters: 10,
  seconds: 60,
  processes: 4,
  announces: 20,
  handovers: 10,
  crashes: 3,
  crashMembers: 4,
  liveness: ['heartbeat'],
  memberTimings: [{ heartbeatIntervalMs: DEFAULT_MEMBER_TIMING.heartbeatIntervalMs, leaseDurationMs: DEFAULT_MEMBER_TIMING.leaseDurationMs }],
};

export const SCALE_USAGE = `Usage: npm run bench:scale -- [--backend ${SCALE_BACKENDS.join(',')}] [--members 100,300,1000] [options]
       npm run bench:scale -- --render results.json

Simulates N processes (one registry, connection and watch each) in worker OS
processes, in roles (masters watching the workers, workers announcing), with E
elections, default timings; prints per N and backend the server's CPU and RSS,
requests/s by verb, watch events delivered, process CPU and RSS per member, and
announce -> seen by every master, crash -> removed and graceful handover p50 / p99.

  --backend <list>         ${SCALE_BACKENDS.join(', ')} (default ${SCALE_DEFAULTS.backends.join(',')})
  --members <list>         cluster sizes N (default ${SCALE_DEFAULTS.members.join(',')}); 0 is the elections-only
                           baseline (the candidates campaign, no member), run once per backend
  --elections <n>          elections (default ${SCALE_DEFAULTS.elections})
  --candidates <n>         candidates per election (default ${SCALE_DEFAULTS.candidates})
  --masters <n>            members watching the workers (default ${SCALE_DEFAULTS.masters})
  --seconds <s>            steady-state window (default ${SCALE_DEFAULTS.seconds})
  --processes <n>          worker OS processes (default ${SCALE_DEFAULTS.processes})
  --announces <n>          timed announces (default ${SCALE_DEFAULTS.announces})
  --handovers <n>          timed graceful handovers (default ${SCALE_DEFAULTS.handovers})
  --crashes <n>            processes killed with SIGKILL (default ${SCALE_DEFAULTS.crashes}); in pod mode their pods
                           are also turned not Ready (timed from there), then deleted
  --crash-members <n>      workers in each killed process (default ${SCALE_DEFAULTS.crashMembers})
  --liveness <list>        registry.member.liveness of every simulated registry, each measured in turn: ${SIMULATED_LIVENESS.join(', ')} (default ${SCALE_DEFAULTS.liveness.join(',')});
                           pod runs on kubernetes only, a kwok pod per member
  --member-timing <list>   heartbeat/lease ms pairs of every simulated member, each measured in turn (default ${timingLabel(DEFAULT_MEMBER_TIMING)})
  --json <file>            also write the results as JSON
  --render <file>          print the table of a JSON file written by --json, run nothing
  --help

Servers come up through tools/testenv (ROLLCALL_TESTENV_ROOT, ROLLCALL_TESTENV_PORT_BASE): use a private instance.`;

/** One --member-timing pair, checked by the rules a registry applies. */
function memberTiming(value: string): BenchMemberTiming {
  const [heartbeat, lease, ...rest] = value.split('/').map(Number);
  if (rest.length > 0 || !Number.isInteger(heartbeat) || !Number.isInteger(lease)) throw new UsageError(`--member-timing takes heartbeat/lease in ms, e.g. 10000/40000, not ${JSON.stringify(value)}`);
  const timing = { heartbeatIntervalMs: heartbeat!, leaseDurationMs: lease! };
  try {
    // core's options only: a plugin with none of its own, never connected
    resolveConfig({ type: 'memory', member: timing }, { type: 'memory', options: {}, connect: () => Promise.reject(new Error('not connected')) });
  } catch (err) {
    throw new UsageError(`--member-timing ${value}: ${(err as Error).message}`);
  }
  return timing;
}

/** The options of a command line; `{ render }` to print a saved run; 'help'. */
export function parseScaleArgs(argv: readonly string[]): ScaleOptions | { render: string } | 'help' {
  const parsed = parseFlags(argv, ['backend', 'backends', 'members', 'elections', 'candidates', 'masters', 'seconds', 'processes', 'announces', 'handovers', 'crashes', 'crash-members', 'liveness', 'member-timing', 'json', 'render']) as Record<string, string | undefined> & { help: boolean };
  if (parsed.help) return 'help';
  if (parsed.render !== undefined) return { render: parsed.render };
  const d = SCALE_DEFAULTS;
  const backends = backendList('backend', parsed.backend ?? parsed.backends ?? d.backends.join(','), SCALE_BACKENDS, `the scale benchmark runs ${SCALE_BACKENDS.join(', ')}`);
  const members = parsed.members === undefined ? d.members : parsed.members.split(',').map((n) => whole('members', n.trim(), 0, 0));
  const liveness = parsed.liveness === undefined ? d.liveness : parsed.liveness.split(',').map((m) => m.trim()).filter(Boolean);
  for (const mode of liveness) {
    if (!(SIMULATED_LIVENESS as readonly string[]).includes(mode)) throw new UsageError(`--liveness must be one of ${SIMULATED_LIVENESS.join(', ')}, not ${JSON.stringify(mode)}`);
  }
  if (liveness.length === 0) throw new UsageError('--liveness names no mode');
  // only the kubernetes plugin reads pod readiness
  const podless = backends.filter((b) => b !== 'kubernetes');
  if (liveness.includes('pod') && podless.length > 0) throw new UsageError(`--liveness pod runs on kubernetes only (a kwok pod per member), not ${podless.join(', ')}`);
  const timings = parsed['member-timing'] === undefined ? d.memberTimings : parsed['member-timing'].split(',').map((t) => t.trim()).filter(Boolean).map(memberTiming);
  if (timings.length === 0) throw new UsageError('--member-timing names no timing');
  const options: ScaleOptions = {
    backends,
    members: [...new Set(members)].sort((a, b) => a - b),
    elections: whole('elections', parsed.elections, d.elections, 0),
    candidates: whole('candidates', parsed.candidates, d.candidates),
    masters: whole('masters', parsed.masters, d.masters),
    seconds: positive('seconds', parsed.seconds, d.seconds),
    processes: whole('processes', parsed.processes, d.processes),
    announces: whole('announces', parsed.announces, d.announces, 0),
    handovers: whole('handovers', parsed.handovers, d.handovers, 0),
    crashes: whole('crashes', parsed.crashes, d.crashes, 0),
    crashMembers: whole('crash-members', parsed['crash-members'], d.crashMembers),
    liveness: SIMULATED_LIVENESS.filter((m) => liveness.includes(m)),
    memberTimings: [...new Map(timings.map((t) => [timingLabel(t), t])).values()],
    ...(parsed.json !== undefined ? { json: parsed.json } : {}),
  };
  if (options.members.includes(0) && options.elections === 0) throw new UsageError('--members 0 (the elections-only baseline) needs --elections of at least 1');
  const smallest = options.members.find((n) => n > 0);
  const crashed = options.crashes * options.crashMembers;
  const needed = options.elections > 0 ? options.candidates : 1;
  if (smallest !== undefined && smallest - options.masters - crashed < needed) {
    throw new UsageError(
      `--members ${smallest} leaves ${smallest - options.masters - crashed} workers beside ${options.masters} masters and ${crashed} in crashed processes: at least ${needed} needed (the candidates of an election)`,
    );
  }
  if (options.handovers > 0 && options.elections > 0 && options.candidates < 2) throw new UsageError('--handovers needs --candidates of at least 2');
  return options;
}
