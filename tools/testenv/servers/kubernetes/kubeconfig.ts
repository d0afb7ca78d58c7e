import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { unitDir } from '../../env/paths.js';
import { caCert, certOf, keyOf, type ClientIdentity } from './pki.js';

/** Path of the kubeconfig of one client identity. */
export function kubeconfigPath(identity: ClientIdentity): string {
  return join(unitDir('kubernetes'), `${identity.file}.kubeconfig`);
}

/**
 * Writes a kubeconfig that points at the test API server with a client certificate.
 * JSON is valid YAML, so every kubeconfig loader reads it.
 */
export function writeKubeconfig(identity: ClientIdentity, server: string, namespace = 'default'): string {
  const file = kubeconfigPath(identity);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'rollcall-testenv', cluster: { server, 'certificate-authority': caCert() } }],
    users: [{ name: identity.commonName, user: { 'client-certificate': certOf(identity), 'client-key': keyOf(identity) } }],
    contexts: [{ name: 'rollcall-testenv', context: { cluster: 'rollcall-testenv', user: identity.commonName, namespace } }],
    'current-context': 'rollcall-testenv',
  };
  writeFileSync(file, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  return file;
}
