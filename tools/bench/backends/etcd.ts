import { requireTestEnv } from '../../testenv/index.js';
import { etcdMetricsCounter } from '../counters/etcd-metrics.js';
import { serverWideIdleProbe } from '../scenarios/idle-requests.js';
import { type BackendConfig, type BenchBackend, crashChildWithConfig } from '../target.js';

/** The test environment's etcd; each scenario keeps its keys under its own cluster. */
export const etcdBackend: BenchBackend = {
  name: 'etcd',
  servers: ['etcd'],
  async prepare() {
    const { endpoints } = requireTestEnv('etcd');
    const backendConfig = (): BackendConfig => ({ type: 'etcd', etcd: { endpoints } });
    return {
      backendConfig,
      crashChild: crashChildWithConfig(backendConfig),
      idle: serverWideIdleProbe(backendConfig, etcdMetricsCounter(endpoints[0]!)),
      close: async () => {},
    };
  },
};
