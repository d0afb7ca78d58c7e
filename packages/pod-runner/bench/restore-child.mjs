// A pod runner in its own process for `bench:pods -- --restore N` (restore-queued.ts). argv[2] is JSON:
//   { namespace, kubeconfig, name, count, mode: 'submit' | 'restore', requeueDelayMs? }
// It prints (synchronously: nothing printed is lost to the SIGKILL that ends it):
//   READY <ms> <queueDepth> createPodRunner resolved, <ms> after it was called
//   FIRST-CREATE <taskId> the task of the first pod create the runner asked for (the namespace's quota refuses it)
// submit: waits for a line on stdin, then submits `count` tasks, 16 in flight, in index order
//   (ids reverse-alphabetical, so the API server's list order is not the submit order), then prints
//   SUBMITTED <ms>
// restore: prints, once the runner's queue holds `count` tasks,
//   RESTORED <ms> <queueDepth> <list order: 'in-order' or the first index out of place>
//   DEPTH <ms> <queueDepth> <phase counts> every second after READY (progress, for the bench's log)
// <ms> is measured from just before createPodRunner was called. The runner's info, warn and error logs go to stderr.
import { writeSync } from 'node:fs';
import { ApiClient } from '@rollcall/kube-client';
import { createPodRunner } from '@rollcall/pod-runner';

const { namespace, kubeconfig, name, count, mode, requeueDelayMs } = JSON.parse(process.argv[2]);
const print = (line) => writeSync(1, `${line}\n`);
const taskIdOf = (i) => `task-${String(count - 1 - i).padStart(6, '0')}`;

let firstCreate;
const request = ApiClient.prototype.request;
ApiClient.prototype.request = function (req) {
  if (firstCreate === undefined && req.context?.verb === 'create' && req.context?.resource === 'pods') {
    firstCreate = req.body?.metadata?.labels?.['rollcall.dev/task-id'] ?? '?';
    print(`FIRST-CREATE ${firstCreate}`);
  }
  return request.call(this, req);
};

const toStderr = (level) => (obj, msg) => {
  const { err, ...rest } = typeof obj === 'object' && obj !== null ? obj : { value: obj };
  process.stderr.write(`${level} ${msg ?? ''} ${JSON.stringify(rest)}${err ? ` err: ${err.message ?? err}` : ''}\n`);
};
const logger = { debug: () => {}, info: toStderr('info'), warn: toStderr('warn'), error: toStderr('error') };

const started = performance.now();
const since = () => (performance.now() - started).toFixed(0);
const runner = await createPodRunner({
  namespace, kubeconfig, name, capacity: { total: 1 }, requeueDelayMs, logger,
  templates: [{ name: 'default', template: { spec: { containers: [{ name: 'main', image: 'registry.example/task:1' }] } } }],
});
print(`READY ${since()} ${runner.queueDepth}`);
setInterval(() => {
  const phases = {};
  for (const s of runner.list()) phases[s.phase] = (phases[s.phase] ?? 0) + 1;
  print(`DEPTH ${since()} ${runner.queueDepth} ${JSON.stringify(phases)}`);
}, 1000);

if (mode === 'submit') {
  await new Promise((resolve) => process.stdin.once('data', resolve));
  const from = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < count) {
      const i = next++;
      await runner.submit({ taskId: taskIdOf(i), taskType: 'bench', args: ['--n', String(i)] });
    }
  }));
  print(`SUBMITTED ${(performance.now() - from).toFixed(0)}`);
} else {
  const poll = setInterval(() => {
    if (runner.queueDepth !== count) return;
    const at = since();
    clearInterval(poll);
    const listed = runner.list().map((s) => s.taskId);
    const misplaced = listed.length === count ? listed.findIndex((id, i) => id !== taskIdOf(i)) : 0;
    print(`RESTORED ${at} ${runner.queueDepth} ${misplaced === -1 ? 'in-order' : `index-${misplaced}`}`);
  }, 5);
}
setInterval(() => {}, 1 << 30);
