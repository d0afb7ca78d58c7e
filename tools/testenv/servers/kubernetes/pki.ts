import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testenvRoot, unitDir } from '../../env/paths.js';
import { runStep } from '../../process/run-step.js';
import { NODE_IP, REAL_NODE_NAME } from './node/layout.js';

/** Where the control plane's certificates and keys live. */
export function pkiDir(): string {
  return join(unitDir('kubernetes'), 'pki');
}

/** A client identity: certificate CN is the user, O entries are its groups. */
export interface ClientIdentity {
  file: string;
  commonName: string;
  organizations: string[];
}

/** Client identities of the control plane; admin is a cluster admin through system:masters. */
export const CLIENTS = {
  admin: { file: 'admin', commonName: 'rollcall-admin', organizations: ['system:masters'] },
  controllerManager: { file: 'kube-controller-manager', commonName: 'system:kube-controller-manager', organizations: [] },
  scheduler: { file: 'kube-scheduler', commonName: 'system:kube-scheduler', organizations: [] },
  // kwok acts for many kubelets (node status, pod status); binding it as admin keeps it simple
  kwok: { file: 'kwok', commonName: 'kwok-controller', organizations: ['system:masters'] },
  // the real node: the kubelet as the Node authorizer expects it, and the API server towards kubelets
  kubelet: { file: 'kubelet', commonName: `system:node:${REAL_NODE_NAME}`, organizations: ['system:nodes'] },
  apiserverKubeletClient: { file: 'apiserver-kubelet-client', commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'] },
} satisfies Record<string, ClientIdentity>;

export const pkiFile = (name: string) => join(pkiDir(), name);
export const caCert = () => pkiFile('ca.crt');
export const caKey = () => pkiFile('ca.key');
export const serviceAccountKey = () => pkiFile('sa.key');
export const serviceAccountPub = () => pkiFile('sa.pub');
export const certOf = (identity: ClientIdentity | { file: string }) => pkiFile(`${identity.file}.crt`);
export const keyOf = (identity: ClientIdentity | { file: string }) => pkiFile(`${identity.file}.key`);
export const APISERVER_SERVING = { file: 'apiserver' };
/** kwok serves the kubelet API (logs, exec) for its fake nodes on 127.0.0.1 with this. */
export const KWOK_SERVING = { file: 'kwok-serving' };
/** The real node's kubelet serves its API (logs, exec) on the node's address with this. */
export const KUBELET_SERVING = { file: 'kubelet-serving' };

const logFile = () => join(testenvRoot(), 'logs', 'kubernetes-pki.log');

function openssl(step: string, args: string[]): Promise<void> {
  return runStep({ step: `kubernetes PKI: ${step}`, command: 'openssl', args, logFile: logFile() });
}

/** One certificate signed by the CA, from an OpenSSL config with its extensions. */
async function issue(name: string, subject: Record<string, string | string[]>, extensions: string[]): Promise<void> {
  if (existsSync(pkiFile(`${name}.crt`))) return;
  const dn = Object.entries(subject).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x, i) => `${i}.${k}=${x}`) : [`${k}=${v}`]));
  const config = pkiFile(`${name}.cnf`);
  writeFileSync(config, ['[req]', 'distinguished_name=dn', 'prompt=no', 'x509_extensions=ext', '[dn]', ...dn, '[ext]', ...extensions, ''].join('\n'));
  await openssl(`issue ${name}`, [
    'req', '-x509', '-new', '-config', config,
    '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', pkiFile(`${name}.key`), '-out', pkiFile(`${name}.crt`),
    '-days', '3650', '-CA', caCert(), '-CAkey', caKey(),
  ]);
}

/**
 * Creates the CA, the API server's serving certificate (127.0.0.1 and the in-cluster
 * names), client certificates and the service-account signing key pair, once.
 */
export async function ensurePki(): Promise<void> {
  mkdirSync(pkiDir(), { recursive: true, mode: 0o700 });
  if (!existsSync(caCert())) {
    const config = pkiFile('ca.cnf');
    writeFileSync(config, ['[req]', 'distinguished_name=dn', 'prompt=no', 'x509_extensions=ext', '[dn]', 'CN=rollcall-testenv-ca', '[ext]',
      'basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature', 'subjectKeyIdentifier=hash', ''].join('\n'));
    await openssl('create CA', ['req', '-x509', '-new', '-config', config, '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', caKey(), '-out', caCert(), '-days', '3650']);
  }
  await issue(APISERVER_SERVING.file, { CN: 'kube-apiserver' }, [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local',
  ]);
  await issue(KWOK_SERVING.file, { CN: 'kwok-kubelet' }, [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ]);
  await issue(KUBELET_SERVING.file, { CN: `system:node:${REAL_NODE_NAME}` }, [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    `subjectAltName=IP:${NODE_IP},IP:127.0.0.1,DNS:${REAL_NODE_NAME}`,
  ]);
  for (const client of Object.values(CLIENTS) as ClientIdentity[]) {
    const subject: Record<string, string | string[]> = { CN: client.commonName };
    if (client.organizations.length) subject.O = client.organizations;
    await issue(client.file, subject, ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=clientAuth']);
  }
  if (!existsSync(serviceAccountPub())) {
    await openssl('create service-account signing key', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', serviceAccountKey()]);
    await openssl('extract service-account public key', ['pkey', '-in', serviceAccountKey(), '-pubout', '-out', serviceAccountPub()]);
  }
}
