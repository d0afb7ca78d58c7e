// CI's clock. As a filter (`… | node timeline.mjs LOG`) it passes its input through and
// writes each line to LOG prefixed with the seconds since it started; with `--summary LOG`
// it prints where the time went: per nx project (the `@rollcall/<name>:` prefix of nx's
// stream output), when its first and last line came and how long that span was.
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [flag, file] = process.argv.slice(2);
if (flag === '--summary') {
  const spans = new Map();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\+(\d+) (?:\x1b\[[0-9;]*m)*(@rollcall\/[\w-]+):/.exec(line);
    if (!m) continue;
    const t = Number(m[1]);
    const span = spans.get(m[2]) ?? { first: t, last: t };
    span.last = t;
    spans.set(m[2], span);
  }
  const rows = [...spans].sort((a, b) => a[1].first - b[1].first);
  console.log('project                  from (s)  to (s)  span (s)');
  for (const [name, { first, last }] of rows) console.log(`${name.padEnd(24)} ${String(first).padStart(8)} ${String(last).padStart(7)} ${String(last - first).padStart(9)}`);
} else {
  const started = Date.now();
  writeFileSync(flag, '');
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    process.stdout.write(line + '\n');
    appendFileSync(flag, `+${Math.round((Date.now() - started) / 1000)} ${line}\n`);
  }
}
