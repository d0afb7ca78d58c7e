import { connect } from 'node:net';

/**
 * Sends a ZooKeeper four-letter-word command (srvr, ruok, mntr) and returns the answer.
 * Rejects when the server cannot be reached within `timeoutMs`.
 */
export function fourLetterWord(host: string, port: number, command: string, timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let answer = '';
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`${command} to ${host}:${port} timed out`)));
    socket.once('connect', () => socket.write(command));
    socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
    socket.once('end', () => resolve(answer));
    socket.once('error', reject);
  });
}

export type ZookeeperMode = 'standalone' | 'leader' | 'follower' | 'observer';

/** The mode a ZooKeeper server reports through `srvr`, or undefined when it does not serve. */
export async function zookeeperMode(host: string, port: number): Promise<ZookeeperMode | undefined> {
  const answer = await fourLetterWord(host, port, 'srvr');
  const mode = answer.match(/^Mode: (\w+)/m)?.[1];
  return mode as ZookeeperMode | undefined;
}
