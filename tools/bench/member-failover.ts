/**
 * `npm run bench:member-failover -- --backends sqlite,etcd --members 5 --timing 5000/20000,10000/40000`:
 * member crash → failover handler start, per backend and member timing (issue 34 item 8).
 * Progress goes to stderr, the table to stdout.
 */
import { up } from '../testenv/index.js';
import { load, machine } from '../testenv/measure/machine.js';
import { backendList, parseFlags, UsageError, whole } from './args.js';
import { BACKENDS } from './backends/index.js';
import { benchMain } from './main.js';
import { memberFailover, type MemberFailoverFigures, type MemberTiming } from './scenarios/member-failover.js';
import { BACKEND_NAMES, type BackendName, type BenchTarget } from './target.js';

interface Options {
  backends: BackendName[];
  members: number;
  timings: MemberTiming[];
}

const USAGE = `Usage: npm run bench:member-failover -- [--backends ${BACKEND_NAMES.join(',')}] [--members N] [--timing H/L,...]

Member crash -> failover handler start (p50 / p99 / max), per backend and member
timing: N member processes SIGKILLed one after another while a leader runs
registry.failover('worker', ...); and the leader's requests per failover beyond
its rate with nobody dying.

  --backends <list>   comma-separated (default: all)
  --members <n>       members killed per backend and timing (default 5)
  --timing <list>     heartbeat/lease milliseconds (default 5000/20000,10000/40000: the defaults, the kubelet's)
  --help`;

function parse(argv: readonly string[]): Options | 'help' {
  const flags = parseFlags(argv, ['backends', 'members', 'timing']);
  if (flags.help) return 'help';
  const timings = String(flags.timing ?? '5000/20000,10000/40000')
    .split(',')
    .map((pair) => {
      const [h, l] = pair.split('/').map(Number);
      if (!Number.isInteger(h) || !Number.isInteger(l) || h! <= 0 || l! <= h!) throw new UsageError(`--timing ${pair}: heartbeat/lease in whole milliseconds, the lease longer`);
      return { heartbeatIntervalMs: h!, leaseDurationMs: l! };
    });
  const backends = flags.backends === undefined ? [...BACKEND_NAMES] : backendList('backends', String(flags.backends), BACKEND_NAMES, 'the backends');
  return { backends, members: whole('members', flags.members as string | undefined, 5), timings };
}

const ms = (n: number) => n.toFixed(0);

benchMain('bench:member-failover', USAGE, parse, async (options, { started, progress }) => {
  const loadBefore = load();
  const servers = [...new Set(options.backends.flatMap((b) => BACKENDS[b].servers))];
  if (servers.length > 0) {
    progress(`bringing up ${servers.join(', ')}`);
    await up(servers);
  }
  // Each row is printed as it is measured: a long run that fails later keeps what it measured.
  console.log(`Rollcall member failover, started ${new Date(started).toISOString()}; ${machine()}; load average ${loadBefore} before.`);
  console.log('');
  console.log('| backend | member heartbeat / lease ms | crash → handler start p50 / p99 / max ms (n) | leader requests per failover | leader requests/s with nobody dying | load average after |');
  console.log('|---|---|---:|---:|---:|---|');
  for (const name of options.backends) {
    let target: BenchTarget | undefined;
    try {
      target = await BACKENDS[name].prepare();
      for (const timing of options.timings) {
        progress(`${name}: ${options.members} members at ${timing.heartbeatIntervalMs}/${timing.leaseDurationMs} ms`);
        const f: MemberFailoverFigures = await memberFailover(target, options.members, timing);
        console.log(`| ${name} | ${f.timing.heartbeatIntervalMs} / ${f.timing.leaseDurationMs} | ${ms(f.latency.p50)} / ${ms(f.latency.p99)} / ${ms(f.latency.max)} (${f.latency.n}) | ${f.requestsPerFailover.toFixed(1)} | ${f.baselinePerSecond.toFixed(2)} | ${load()} |`);
      }
    } finally {
      await target?.close();
    }
  }
  console.log('');
  console.log(`Ended ${new Date().toISOString()}, ${Math.round((Date.now() - started) / 1000)} s.`);
});
