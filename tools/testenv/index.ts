/**
 * The Rollcall real-server test environment, for tests in any package:
 *
 * ```ts
 * import { readTestEnv, restartServer } from '@rollcall/tools/testenv';
 * ```
 */
export { readTestEnv, requireTestEnv, ENV_SCHEMA_VERSION } from './env/env-file.js';
export type { TestEnv } from './env/env-file.js';
export type { ZookeeperEnv, ZookeeperEnsembleEnv, ZookeeperEnsembleMember } from './servers/zookeeper.js';
export type { MariadbEnv } from './servers/mariadb.js';
export type { PostgresEnv } from './servers/postgres.js';
export type { EtcdEnv, EtcdAuthEnv } from './servers/etcd.js';
export type { KubernetesEnv, RealNodeEnv } from './servers/kubernetes.js';
export { up, down, status, refreshEnvFile } from './orchestrate.js';
export type { UnitStatus } from './orchestrate.js';
export { stopServer, startServer, restartServer } from './faults/faults.js';
export { restartApiServerAndControllers, restartKubeControllers } from './kube/controller-restart.js';
export { zookeeperEnsembleLeader, waitForZookeeperEnsembleLeader, killZookeeperEnsembleLeader } from './servers/zookeeper/leader.js';
export type { StopOptions } from './faults/faults.js';
export { compactServer } from './faults/compaction.js';
export type { CompactableServer, Compaction } from './faults/compaction.js';
export { mintServiceAccountToken, requestAs, serviceAccountKubeconfig } from './kube/service-account-token.js';
export type { MintTokenOptions, RawAnswer } from './kube/service-account-token.js';
export { holdRequests, type HeldRequests } from './kube/held-requests.js';
export { createGlobalSetup, REAL_NODE_INSTANCE } from './setup/global-setup-factory.js';
export { SERVER_NAMES } from './catalog.js';
export type { Backend, Server, Credentials } from './servers/server.js';
export type { ServerName } from './catalog.js';
export type { GlobalSetupOptions, PrivateInstance } from './setup/global-setup-factory.js';
export { zookeeperMode, fourLetterWord } from './servers/zookeeper/four-letter-word.js';
export { TcpProxy, TcpProxyGroup } from './faults/tcp-proxy.js';
export { kubeconfigVia, proxiedKubeconfig } from './faults/proxied-kubeconfig.js';
export { percentile, summarize, type Summary } from './measure/stats.js';
export { logTailBlock, serverWait } from './process/server-wait.js';
export { load, machine } from './measure/machine.js';
export { monotonicMs } from './measure/monotonic.js';
export { runProcess, type ProcessResult, type RunProcessOptions } from './process/run-process.js';
export { ClientProxies } from './faults/client-proxies.js';
export type { TcpFault, TcpCutOptions, TcpTarget } from './faults/tcp-proxy.js';
export { TestenvError } from './env/errors.js';
export { envFilePath, testenvRoot } from './env/paths.js';
export { buildClientGoElector, ClientGoCandidate } from './kube/client-go-elector.js';
export type { ClientGoEvent, ClientGoCandidateOptions } from './kube/client-go-elector.js';
export { KWOK_POD_ANNOTATIONS, KWOK_LOG_CONTAINER, kwokContainerLogPath } from './servers/kubernetes/kwok-stages.js';
export { KubeAdmin } from './kube/kube-admin.js';
export { AuditLog, type AuditEvent, type AuditTotals, type AuditWindow } from './kube/audit-log.js';
export { realNode, onRealNode, waitForPod, containerPids, signalContainer, followPodLogs, type FollowedLog } from './kube/real-node-pods.js';
export { buildAppImage, type AppImage } from './kube/app-image.js';
export { captureHostState, diffHostState, type HostState } from './measure/host-state.js';
