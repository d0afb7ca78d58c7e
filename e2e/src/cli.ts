#!/usr/bin/env node
/**
 * The long soak: `npm run soak -- --backend etcd --terms 10000`. Brings up the
 * backend's server on the e2e private instance, runs the soak, prints its
 * figures (and any violation), and stops the servers (unless
 * ROLLCALL_TESTENV_KEEP=1). Exits 1 on any violation.
 */
import { parseArgs } from 'node:util';
import { down, load, machine, up } from '@rollcall/tools/testenv';
import { BACKEND_NAMES, soakBackend, type BackendName } from './backends.js';
import { formatFigures } from './figures.js';
import { E2E_INSTANCE } from './instance.js';
import { runSoak } from './soak.js';

const { values } = parseArgs({
  options: {
    backend: { type: 'string', default: BACKEND_NAMES.join(',') },
    terms: { type: 'string' },
    'duration-s': { type: 'string' },
    candidates: { type: 'string', default: '3' },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  console.log(`npm run soak -- [--backend ${BACKEND_NAMES.join('|')}[,...]] [--terms N] [--duration-s S] [--candidates N]
  Runs until N election terms have begun or S seconds have passed (whichever first; default --terms 1000), and at least one full round of faults.`);
  process.exit(0);
}

const backends = values.backend.split(',').map((b) => soakBackend(b.trim()).name as BackendName);
const terms = values.terms === undefined && values['duration-s'] === undefined ? 1000 : values.terms === undefined ? undefined : Number(values.terms);
const durationMs = values['duration-s'] === undefined ? undefined : Number(values['duration-s']) * 1000;

// tools/testenv reads these at each call: the servers and the fault helpers are the private instance's.
process.env.ROLLCALL_TESTENV_ROOT = E2E_INSTANCE.root;
process.env.ROLLCALL_TESTENV_PORT_BASE = String(E2E_INSTANCE.portBase);

console.log(`soak: ${new Date().toISOString()}, ${machine()}, load average ${load()}`);
let failed = false;
const servers = [...new Set(backends.flatMap((b) => soakBackend(b).servers))];
try {
  // up([]) would mean every server; sqlite alone needs none.
  if (servers.length > 0) await up(servers);
  for (const backend of backends) {
    const result = await runSoak({
      backend,
      candidates: Number(values.candidates),
      ...(terms === undefined ? {} : { terms }),
      ...(durationMs === undefined ? {} : { durationMs }),
      log: (line) => console.log(line),
    });
    console.log(`\n${formatFigures(result.figures)}\nload average ${load()}; logs and timeline: ${result.workDir}\n`);
    for (const v of result.violations) console.log(`VIOLATION ${v}`);
    failed ||= result.violations.length > 0;
  }
} finally {
  if (servers.length > 0 && process.env.ROLLCALL_TESTENV_KEEP !== '1') await down();
}
process.exit(failed ? 1 : 0);
