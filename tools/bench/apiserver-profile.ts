/**
 * `npm run bench:apiserver-profile -- --seconds 40`: a CPU profile of the test
 * instance's kube-apiserver (ROLLCALL_TESTENV_ROOT), taken while something else
 * loads it — run it during the window of a `bench:scale` run. Prints where the
 * API server's CPU went (cumulative shares of the frames that matter to
 * Rollcall: the write path, managed fields, authentication, the garbage
 * collector) and the top frames, and keeps the raw profile for `go tool pprof`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireTestEnv } from '../testenv/index.js';
import { load, machine } from '../testenv/measure/machine.js';
import { parseFlags, UsageError, whole } from './args.js';
import { benchMain } from './main.js';

/** Frames whose cumulative share answers "what does a heartbeat cost the API server" (each pattern names one frame; indented: a part of the one above). */
const CATEGORIES: readonly [string, RegExp][] = [
  ['a PATCH, all of it', /handlers\.\(\*patcher\)\.patchResource\.func2$/],
  ['  of it, the merge patch itself', /handlers\.\(\*jsonPatcher\)\.applyJSPatch$/],
  ['  of it, managed fields', /managedfields\/internal\.\(\*FieldManager\)\.Update$/],
  ['storage: etcd round trips (gRPC)', /grpc\.\(\*ClientConn\)\.Invoke$/],
  ['authentication', /authentication\/request\/union\.\(\*unionAuthRequestHandler\)\.AuthenticateRequest$/],
  ['  of it, client certificates', /x509\.\(\*Certificate\)\.Verify$/],
  ['authorization (RBAC)', /authorization\/union\.unionAuthzHandler\.Authorize$/],
  ['audit', /audit\.\(\*AuditContext\)\.visitEvent$/],
  ['watch fan-out (cacher)', /cacher\.\(\*cacheWatcher\)\.process$/],
  ['Go garbage collector', /^runtime\.gcBgMarkWorker$/],
];

interface Frame {
  name: string;
  cumPercent: number;
  flatPercent: number;
}

const USAGE = `Usage: npm run bench:apiserver-profile -- [--seconds 1..600] [--top <n>] [--file <saved.pb.gz>]

  --seconds <s>   how long the API server's CPU is sampled (default 40, at most 600)
  --top <n>       frames listed by flat share (default 15)
  --file <path>   summarise a profile saved by an earlier run instead of taking one
  --help`;

/** The options of a command line, or 'help'. */
function parseProfileArgs(argv: readonly string[]): { seconds: number; top: number; file: string | undefined } | 'help' {
  const parsed = parseFlags(argv, ['seconds', 'top', 'file']) as Record<string, string | undefined> & { help: boolean };
  if (parsed.help) return 'help';
  const seconds = whole('seconds', parsed.seconds, 40);
  if (seconds > 600) throw new UsageError(`--seconds must be at most 600, not ${seconds}`);
  return { seconds, top: whole('top', parsed.top, 15), file: parsed.file };
}

/** GET /debug/pprof/profile as the instance's admin (the apiserver runs with --profiling; /debug is the masters' only). */
function fetchProfile(seconds: number): Promise<Buffer> {
  const kube = requireTestEnv('kubernetes');
  const url = new URL(`/debug/pprof/profile?seconds=${seconds}`, kube.server);
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: readFileSync(kube.caFile), cert: readFileSync(kube.adminCertFile), key: readFileSync(kube.adminKeyFile), timeout: (seconds + 30) * 1000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`GET ${url.pathname}: HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 200)}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url.pathname}: no answer within ${seconds + 30} s`)));
    req.on('error', reject);
    req.end();
  });
}

/** `go tool pprof -top -cum`, parsed: every frame with its flat and cumulative share of the samples. */
function frames(file: string): { frames: Frame[]; header: string } {
  const text = execFileSync('go', ['tool', 'pprof', '-top', '-cum', '-nodecount=5000', file], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = text.split('\n');
  const header = lines.filter((l) => /^(Duration|Showing nodes)/.test(l.trim())).join('; ');
  const parsed: Frame[] = [];
  for (const line of lines) {
    const m = /^\s*\S+\s+([\d.]+)%\s+[\d.]+%\s+\S+\s+([\d.]+)%\s+(.+)$/.exec(line);
    if (m) parsed.push({ flatPercent: Number(m[1]), cumPercent: Number(m[2]), name: m[3]!.trim() });
  }
  return { frames: parsed, header };
}

benchMain('bench:apiserver-profile', USAGE, parseProfileArgs, async (args, { progress }) => {
  const { seconds, top } = args;
  const loadBefore = load();
  const started = new Date();
  let file = args.file;
  if (!file) {
    progress(`sampling the API server's CPU for ${seconds} s`);
    file = join(tmpdir(), `rollcall-apiserver-${started.toISOString().replace(/[:.]/g, '-')}.pb.gz`);
    writeFileSync(file, await fetchProfile(seconds));
  }
  const { frames: all, header } = frames(file);
  console.log(args.file ? `API server CPU profile ${file}` : `API server CPU profile, ${started.toISOString()}, ${seconds} s; ${machine()}; load ${loadBefore} before, ${load()} after`);
  console.log(header);
  console.log('\nshare of the API server\'s sampled CPU (cumulative: the frame and what it calls):');
  for (const [label, pattern] of CATEGORIES) {
    const match = all.filter((f) => pattern.test(f.name)).sort((a, b) => b.cumPercent - a.cumPercent)[0];
    console.log(`  ${label.padEnd(36)} ${match ? `${match.cumPercent.toFixed(1).padStart(5)} %  ${match.name}` : '    - (no sample)'}`);
  }
  console.log(`\ntop ${top} frames by flat share:`);
  for (const f of [...all].sort((a, b) => b.flatPercent - a.flatPercent).slice(0, top)) console.log(`  ${f.flatPercent.toFixed(1).padStart(5)} %  ${f.name}`);
  console.log(`\nraw profile: ${file} (go tool pprof -http=: ${file})`);
});
