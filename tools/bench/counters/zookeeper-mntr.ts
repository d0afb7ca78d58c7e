import { fourLetterWord } from '../../testenv/index.js';
import type { ServerCounter } from '../scenarios/idle-requests.js';

/**
 * ZooKeeper's `mntr` four-letter word: `zk_packets_received`, every request
 * packet of every session, pings included (the server does not break them
 * down by operation). The `mntr` itself counts as one.
 */
export function zookeeperMntrCounter(host: string, port: number): ServerCounter {
  return {
    source: `ZooKeeper mntr zk_packets_received (pings included) at ${host}:${port}`,
    readCost: 1,
    async read() {
      const answer = await fourLetterWord(host, port, 'mntr');
      const received = /^zk_packets_received\s+(\d+)$/m.exec(answer)?.[1];
      if (received === undefined) throw new Error(`mntr at ${host}:${port} gave no zk_packets_received: ${answer.slice(0, 200)}`);
      return { total: Number(received) };
    },
  };
}
