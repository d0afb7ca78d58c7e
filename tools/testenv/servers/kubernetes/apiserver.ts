import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { port } from './layout.js';
import { unitDir } from '../../env/paths.js';
import { KUBERNETES } from './components.js';
import { binaryPath } from '../../install/go-build.js';
import { httpsRequest } from '../../process/http-probe.js';
import type { Unit } from '../../process/unit.js';
import { APISERVER_SERVING, CLIENTS, caCert, certOf, keyOf, serviceAccountKey, serviceAccountPub } from './pki.js';
import { realNodeEnabled } from './node/layout.js';
import { SERVICE_ACCOUNT_ISSUER, SERVICE_CIDR, apiServerUrl, auditLogPath } from './layout.js';

/** Every request at Metadata level (who, verb, resource, status), so benchmarks can count them. */
const AUDIT_POLICY = {
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['RequestReceived'],
  rules: [{ level: 'Metadata' }],
};

/** kube-apiserver: TLS on 127.0.0.1, Node+RBAC authorization, audit log, TokenRequest. */
export function apiserverUnit(): Unit {
  const dir = unitDir('kubernetes');
  const policyFile = join(dir, 'audit-policy.json');
  return {
    name: 'kube-apiserver',
    ports: [port('kubeApiserver')],
    startTimeoutMs: 120_000,
    // after SIGTERM it drains within a few seconds, then waits for idle HTTP/2 streams
    // (its own clients' watches) far longer; a fault test needs it gone, not polite
    stopGraceMs: 5_000,
    async prepare() {
      mkdirSync(dirname(auditLogPath()), { recursive: true });
      writeFileSync(policyFile, JSON.stringify(AUDIT_POLICY, null, 2) + '\n');
    },
    command() {
      return {
        command: binaryPath(KUBERNETES, 'kube-apiserver'),
        args: [
          `--etcd-servers=http://127.0.0.1:${port('kubernetesEtcdClient')}`,
          '--bind-address=127.0.0.1',
          '--advertise-address=127.0.0.1',
          `--secure-port=${port('kubeApiserver')}`,
          `--tls-cert-file=${certOf(APISERVER_SERVING)}`,
          `--tls-private-key-file=${keyOf(APISERVER_SERVING)}`,
          `--client-ca-file=${caCert()}`,
          '--authorization-mode=Node,RBAC',
          '--anonymous-auth=false',
          `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
          `--service-account-key-file=${serviceAccountPub()}`,
          `--service-account-signing-key-file=${serviceAccountKey()}`,
          `--service-cluster-ip-range=${SERVICE_CIDR}`,
          // the "kubernetes" Service endpoint may not be a loopback address; nothing needs it
          '--endpoint-reconciler-type=none',
          `--audit-policy-file=${policyFile}`,
          `--audit-log-path=${auditLogPath()}`,
          '--audit-log-format=json',
          // written as requests complete, none lost at shutdown (counts must be exact)
          '--audit-log-mode=blocking',
          // bounded across many runs; a benchmark reads far less than this
          '--audit-log-maxsize=200',
          '--audit-log-maxbackup=2',
          '--allow-privileged=true',
          // fake nodes (kwok) only have an InternalIP on loopback; never resolve node names
          '--kubelet-preferred-address-types=InternalIP',
          // /debug/pprof for bench:apiserver-profile; only system:masters may read it
          '--profiling=true',
          `--cert-dir=${join(dir, 'apiserver-certs')}`,
          // a real kubelet authenticates and authorizes its callers, and is verified in turn
          ...(realNodeEnabled()
            ? [`--kubelet-client-certificate=${certOf(CLIENTS.apiserverKubeletClient)}`, `--kubelet-client-key=${keyOf(CLIENTS.apiserverKubeletClient)}`, `--kubelet-certificate-authority=${caCert()}`]
            : []),
        ],
      };
    },
    async isHealthy() {
      const res = await httpsRequest(`${apiServerUrl()}/readyz`, { caFile: caCert(), certFile: certOf(CLIENTS.admin), keyFile: keyOf(CLIENTS.admin) });
      return res.status === 200;
    },
  };
}
