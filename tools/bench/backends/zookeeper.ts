import { requireTestEnv } from '../../testenv/index.js';
import { zookeeperMntrCounter } from '../counters/zookeeper-mntr.js';
import { serverWideIdleProbe } from '../scenarios/idle-requests.js';
import { type BackendConfig, type BenchBackend, crashChildWithConfig } from '../target.js';

/** The test environment's standalone ZooKeeper; each scenario keeps its znodes under its own cluster. */
export const zookeeperBackend: BenchBackend = {
  name: 'zookeeper',
  servers: ['zookeeper'],
  async prepare() {
    const env = requireTestEnv('zookeeper');
    const backendConfig = (): BackendConfig => ({ type: 'zookeeper', zookeeper: { connectString: env.connectString, openAcl: true } });
    return {
      backendConfig,
      crashChild: crashChildWithConfig(backendConfig),
      idle: serverWideIdleProbe(backendConfig, zookeeperMntrCounter(env.host, env.port)),
      close: async () => {},
    };
  },
};
