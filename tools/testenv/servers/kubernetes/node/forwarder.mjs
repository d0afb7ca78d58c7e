// A TCP forwarder between the machine and an instance's network namespace. Node cannot
// enter a namespace, but a unix socket is a file, reachable from both sides:
//   node forwarder.mjs netns <config.json>  (started inside the namespace: it holds it)
//     unix <dir>/<port>.sock -> 127.0.0.1:<port>, and each extra TCP listener -> its target
//   node forwarder.mjs host <config.json>   (in the machine's namespace)
//     127.0.0.1:<port> -> unix <dir>/<port>.sock
// config: { "socketDir": "...", "ports": [n...], "listeners": [{ "host", "port", "targetPort" }] }
import { createServer, connect } from 'node:net';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const [mode, configFile] = process.argv.slice(2);
const config = JSON.parse(readFileSync(configFile, 'utf8'));
const socketOf = (port) => join(config.socketDir, `${port}.sock`);

function pipe(client, target) {
  const upstream = connect(target);
  client.pipe(upstream).pipe(client);
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  // a refused or reset target closes the client at once, as a refused port would look
  client.once('error', end).once('close', end);
  upstream.once('error', end).once('close', end);
}

function listen(address, target) {
  const server = createServer({ pauseOnConnect: false }, (client) => pipe(client, target));
  server.once('error', (error) => {
    console.error(`forwarder (${mode}): cannot listen on ${JSON.stringify(address)}: ${error.message}`);
    process.exit(1);
  });
  server.listen(address, () => console.error(`forwarder (${mode}): ${JSON.stringify(address)} -> ${JSON.stringify(target)}`));
}

if (mode === 'netns') {
  mkdirSync(config.socketDir, { recursive: true, mode: 0o700 });
  for (const port of config.ports) {
    rmSync(socketOf(port), { force: true });
    listen({ path: socketOf(port) }, { host: '127.0.0.1', port });
  }
  for (const l of config.listeners ?? []) listen({ host: l.host, port: l.port }, { host: '127.0.0.1', port: l.targetPort });
} else if (mode === 'host') {
  for (const port of config.ports) listen({ host: '127.0.0.1', port }, { path: socketOf(port) });
} else {
  console.error('usage: node forwarder.mjs netns|host <config.json>');
  process.exit(2);
}
process.on('SIGTERM', () => process.exit(0));
