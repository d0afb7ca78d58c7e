// A process that wires shutdownOnSignals, run by shutdown.test.ts:
// `node shutdown-child.mjs <mode> <deadlineMs>`. `registry`: a memory registry
// with a member and a leadership; `hang`: a close() that never ends.
// Prints `ready`, `closing` when the signal arrived, then the shutdown's result as one JSON line; logs go to stderr.
import { createRegistry, shutdownOnSignals } from '../../dist/index.js';

const [mode, deadlineText] = process.argv.slice(2);
const logger = { debug() {}, info() {}, warn: (f, m) => console.error('warn', m), error: (f, m) => console.error('error', m) };
let closable;
const lost = [];
let registry;
if (mode === 'registry') {
  registry = await createRegistry({ type: 'memory', cluster: 'shutdown', identity: 'child' });
  await registry.announce({ role: 'worker', id: 'w1' });
  const leadership = registry.campaign('scheduler');
  leadership.on('lost', ({ reason }) => lost.push(reason));
  await leadership.whenElected();
  closable = registry;
} else {
  closable = { close: () => new Promise(() => {}) };
  setInterval(() => {}, 1 << 30); // an application's work keeps it alive; signal handlers do not
}
let startedAt;
const handle = shutdownOnSignals(closable, { deadlineMs: Number(deadlineText), logger, beforeClose: () => {
    startedAt = performance.now();
    console.log('closing');
  },
});
handle.done.then((result) => {
  // After close() the registry refuses calls: what a closed registry says.
  let after;
  try {
    registry?.campaign('probe');
    after = 'open';
  } catch (err) {
    after = err.code;
  }
  console.log(JSON.stringify({ ...result, elapsedMs: performance.now() - startedAt, after, lost }));
});
console.log('ready');
