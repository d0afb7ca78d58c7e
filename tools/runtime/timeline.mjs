// CI's clock. As a filter (`… | node timeline.mjs LOG`) it passes its input through and
// writes each line to LOG prefixed with the seconds since it started; with `--summary LOG`
// it prints where the time went: per nx task of 5 s or more, from nx's `> nx run` line to its
// project's last line (the `@rollcall/<name>:` prefix of nx's stream output).
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [flag, file] = process.argv.slice(2);
if (flag === '--summary') {
  // a task starts at nx's "> nx run <project>:<target>" line and ends at its project's last line before the next task of that project starts
  const tasks = [];
  const current = new Map();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const stamp = /^\+(\d+) (.*)$/.exec(line);
    if (!stamp) continue;
    const t = Number(stamp[1]);
    const text = stamp[2].replace(/\x1b\[[0-9;]*m/g, '');
    const start = /^> nx run (@rollcall\/[\w-]+):(\S+)/.exec(text);
    if (start) {
      const task = { name: `${start[1]}:${start[2]}`, first: t, last: t };
      tasks.push(task);
      current.set(start[1], task);
      continue;
    }
    const project = /^(@rollcall\/[\w-]+):/.exec(text)?.[1];
    if (project && current.has(project)) current.get(project).last = t;
  }
  console.log('task                                 from (s)  to (s)  span (s)');
  for (const { name, first, last } of tasks.filter((k) => k.last - k.first >= 5)) console.log(`${name.padEnd(36)} ${String(first).padStart(8)} ${String(last).padStart(7)} ${String(last - first).padStart(9)}`);
} else {
  const started = Date.now();
  writeFileSync(flag, '');
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    process.stdout.write(line + '\n');
    appendFileSync(flag, `+${Math.round((Date.now() - started) / 1000)} ${line}\n`);
  }
}
