/**
 * The Rollcall real-server test environment, for tests in any package:
 *
 * ```ts
 * import { readTestEnv, restartServer } from '@rollcall/tools/testenv';
 * ```
 */
export { readTestEnv, requireTestEnv, ENV_SCHEMA_VERSION } from './env-file.js';
export type {
  TestEnv,
  ZookeeperEnv,
  ZookeeperEnsembleEnv,
  ZookeeperEnsembleMember,
  MariadbEnv,
  PostgresEnv,
  EtcdEnv,
  EtcdAuthEnv,
  KubernetesEnv,
  RealNodeEnv,
  Credentials,
} from './env-file.js';
export { up, down, status, refreshEnvFile } from './orchestrate.js';
export type { UnitStatus } from './orchestrate.js';
export { stopServer, startServer, restartServer, restartApiServerAndControllers, restartKubeControllers, zookeeperEnsembleLeader, waitForZookeeperEnsembleLeader, killZookeeperEnsembleLeader } from './faults.js';
export type { StopOptions } from './faults.js';
export { compactServer } from './compaction.js';
export type { CompactableServer, Compaction } from './compaction.js';
export { mintServiceAccountToken, serviceAccountKubeconfig } from './service-account-token.js';
export type { MintTokenOptions } from './service-account-token.js';
export { createGlobalSetup, REAL_NODE_INSTANCE } from './global-setup-factory.js';
export { SERVER_NAMES } from './catalog.js';
export type { ServerName } from './catalog.js';
export type { GlobalSetupOptions, PrivateInstance } from './global-setup-factory.js';
export { zookeeperMode, fourLetterWord } from './four-letter-word.js';
export { TcpProxy, TcpProxyGroup } from './tcp-proxy.js';
export { kubeconfigVia, proxiedKubeconfig } from './proxied-kubeconfig.js';
export { percentile, summarize, type Summary } from './stats.js';
export { logTailBlock, serverWait } from './server-wait.js';
export { load, machine } from './machine.js';
export { monotonicMs } from './monotonic.js';
export { runProcess, type ProcessResult, type RunProcessOptions } from './run-process.js';
export { ClientProxies } from './client-proxies.js';
export type { TcpFault, TcpCutOptions, TcpTarget } from './tcp-proxy.js';
export { TestenvError } from './errors.js';
export { envFilePath, testenvRoot } from './paths.js';
export { buildClientGoElector, ClientGoCandidate } from './client-go-elector.js';
export type { ClientGoEvent, ClientGoCandidateOptions } from './client-go-elector.js';
export { KWOK_POD_ANNOTATIONS, KWOK_LOG_CONTAINER, kwokContainerLogPath } from './servers/kubernetes/kwok-stages.js';
export { KubeAdmin } from './kube-admin.js';
export { AuditLog, type AuditEvent, type AuditTotals, type AuditWindow } from './audit-log.js';
export { realNode, onRealNode, waitForPod, containerPids, signalContainer, followPodLogs, type FollowedLog } from './real-node-pods.js';
export { captureHostState, diffHostState, type HostState } from './host-state.js';
