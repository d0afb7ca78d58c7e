#!/usr/bin/env node
/**
 * The long failover chaos: `npm run chaos -w @rollcall/e2e -- --backend etcd --minutes 30`.
 * Brings up the backend's server on the e2e private instance, runs rounds of
 * the failover chaos (failover-chaos.ts) until the time is up, prints its
 * figures (and any violation), and stops the servers (unless
 * ROLLCALL_TESTENV_KEEP=1). Exits 1 on any violation.
 */
import { parseArgs } from 'node:util';
import { down, load, machine, up } from '@rollcall/tools/testenv';
import { BACKEND_NAMES, soakBackend, type BackendName } from './backends.js';
import { formatChaosFigures, runFailoverChaos } from './failover-chaos.js';
import { CHAOS_FAULT_KINDS, type ChaosFaultKind } from './failover-verdict.js';
import { E2E_INSTANCE } from './instance.js';

const { values } = parseArgs({
  options: {
    backend: { type: 'string', default: BACKEND_NAMES.join(',') },
    minutes: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '1' },
    workers: { type: 'string', default: '3' },
    without: { type: 'string', default: '' },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  console.log(`npm run chaos -w @rollcall/e2e -- [--backend ${BACKEND_NAMES.join('|')}[,...]] [--minutes M] [--rounds N] [--workers N] [--without ${CHAOS_FAULT_KINDS.join('|')}[,...]]
  Per backend, rounds of the failover chaos until M minutes have passed (default 10), and at least N rounds (default 1).`);
  process.exit(0);
}

const backends = values.backend.split(',').map((b) => soakBackend(b.trim()).name as BackendName);
// tools/testenv reads these at each call: the servers and the fault helpers are the private instance's.
process.env.ROLLCALL_TESTENV_ROOT = E2E_INSTANCE.root;
process.env.ROLLCALL_TESTENV_PORT_BASE = String(E2E_INSTANCE.portBase);

console.log(`failover chaos: ${new Date().toISOString()}, ${machine()}, load average ${load()}`);
let failed = false;
const servers = [...new Set(backends.flatMap((b) => soakBackend(b).servers))];
try {
  // up([]) would mean every server; sqlite alone needs none.
  if (servers.length > 0) await up(servers);
  for (const backend of backends) {
    const without = values.without.split(',').map((k) => k.trim()).filter(Boolean) as ChaosFaultKind[];
    const unknown = without.filter((k) => !CHAOS_FAULT_KINDS.includes(k));
    if (unknown.length > 0) throw new Error(`unknown fault kinds ${unknown.join(', ')}; they are ${CHAOS_FAULT_KINDS.join(', ')}`);
    const result = await runFailoverChaos({ backend, without, workers: Number(values.workers), rounds: Number(values.rounds), durationMs: Number(values.minutes) * 60_000, log: (line) => console.log(line) });
    console.log(`\n${formatChaosFigures(result.figures)}\nload average ${load()}; logs and timeline: ${result.workDir}\n`);
    for (const v of result.violations) console.log(`VIOLATION ${v}`);
    failed ||= result.violations.length > 0;
  }
} finally {
  if (servers.length > 0 && process.env.ROLLCALL_TESTENV_KEEP !== '1') await down();
}
process.exit(failed ? 1 : 0);
