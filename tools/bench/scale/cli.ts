/**
 * `npm run bench:scale -- --backend kubernetes,etcd,zookeeper --members 100,300,1000 --elections 100`:
 * N simulated processes per size, each backend's costs side by side (see
 * args.ts). Progress goes to stderr; the table and its notes to stdout;
 * `--json FILE` keeps the results for the plot (plot.py) and `--render FILE`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { DEFAULT_LEASE_TIMING, DEFAULT_MEMBER_TIMING } from '@rollcall/core';
import { load, machine } from '../../testenv/measure/machine.js';
import { benchMain } from '../main.js';
import { parseScaleArgs, SCALE_USAGE } from './args.js';
import type { ScaleResults } from './results.js';
import { runScale } from './run.js';
import { renderScaleReport } from './table.js';

benchMain('bench:scale', SCALE_USAGE, parseScaleArgs, async (options, { started, progress }) => {
  if ('render' in options) {
    console.log(renderScaleReport(JSON.parse(readFileSync(options.render, 'utf8')) as ScaleResults));
    return;
  }
  const { json, ...rest } = options;
  const loadBefore = load();
  const rows = await runScale(options, progress);
  const m = DEFAULT_MEMBER_TIMING;
  const e = DEFAULT_LEASE_TIMING;
  const results: ScaleResults = {
    startedAt: new Date(started).toISOString(),
    machine: machine(),
    loadBefore,
    loadAfter: load(),
    durationSeconds: (Date.now() - started) / 1000,
    options: rest,
    timing: `default timings (member heartbeat ${m.heartbeatIntervalMs / 1000} s, lease ${m.leaseDurationMs / 1000} s, where a row names no other); elections ${e.leaseDurationMs / 1000} / ${e.renewDeadlineMs / 1000} / ${e.retryPeriodMs / 1000} s`,
    rows,
  };
  if (json) writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
  console.log(renderScaleReport(results));
});
