import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testenvRoot } from '../../env/paths.js';
import { runStep } from '../../process/run-step.js';

/** The PEM files of the standalone server's `secureClientPort`, made once per instance by {@link ensureZookeeperTls}. */
export interface ZookeeperTlsFiles {
  /** The CA that signed the server's and the client's certificates. */
  caFile: string;
  /** A client certificate the server accepts (it requires one: `ssl.clientAuth=need`). */
  certFile: string;
  keyFile: string;
  /** Another CA, which signed nothing the server shows: a client trusting only it must refuse the server. */
  wrongCaFile: string;
  /** Server key and certificate in one PEM file: ZooKeeper's `ssl.keyStore.type=PEM`. */
  serverKeyStore: string;
}

/** Where the files live, under the unit's directory. */
export function zookeeperTlsFiles(dir: string): ZookeeperTlsFiles {
  const tls = join(dir, 'tls');
  return {
    caFile: join(tls, 'ca.crt'),
    certFile: join(tls, 'client.crt'),
    keyFile: join(tls, 'client.key'),
    wrongCaFile: join(tls, 'wrong-ca.crt'),
    serverKeyStore: join(tls, 'server.pem'),
  };
}

const openssl = (step: string, args: string[]) =>
  runStep({ step: `zookeeper TLS: ${step}`, command: 'openssl', args, logFile: join(testenvRoot(), 'logs', 'zookeeper-tls.log') });

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

async function ca(dir: string, name: string): Promise<void> {
  const config = join(dir, `${name}.cnf`);
  writeFileSync(config, ['[req]', 'distinguished_name=dn', 'prompt=no', 'x509_extensions=ext', '[dn]', `CN=rollcall-testenv-zookeeper-${name}`, '[ext]',
    'basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature', 'subjectKeyIdentifier=hash', ''].join('\n'));
  await openssl(`create ${name}`, ['req', '-x509', '-new', '-config', config, ...EC, '-keyout', join(dir, `${name}.key`), '-out', join(dir, `${name}.crt`), '-days', '3650']);
}

async function issue(dir: string, name: string, extensions: string[]): Promise<void> {
  const config = join(dir, `${name}.cnf`);
  writeFileSync(config, ['[req]', 'distinguished_name=dn', 'prompt=no', 'x509_extensions=ext', '[dn]', `CN=rollcall-testenv-zookeeper-${name}`, '[ext]', ...extensions, ''].join('\n'));
  await openssl(`issue ${name}`, ['req', '-x509', '-new', '-config', config, ...EC, '-keyout', join(dir, `${name}.key`), '-out', join(dir, `${name}.crt`),
    '-days', '3650', '-CA', join(dir, 'ca.crt'), '-CAkey', join(dir, 'ca.key')]);
}

/**
 * Makes the CA, the server's certificate (127.0.0.1 and localhost), a client
 * certificate and a second, unrelated CA, once: openssl with EC P-256 keys, kept as
 * PEM, which ZooKeeper 3.8 reads as key and trust store directly (no keytool).
 */
export async function ensureZookeeperTls(dir: string): Promise<ZookeeperTlsFiles> {
  const files = zookeeperTlsFiles(dir);
  const tls = join(dir, 'tls');
  if (existsSync(files.serverKeyStore)) return files;
  mkdirSync(tls, { recursive: true, mode: 0o700 });
  await ca(tls, 'ca');
  await ca(tls, 'wrong-ca');
  const leaf = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment'];
  await issue(tls, 'server', [...leaf, 'extendedKeyUsage=serverAuth,clientAuth', 'subjectAltName=IP:127.0.0.1,DNS:localhost']);
  await issue(tls, 'client', [...leaf, 'extendedKeyUsage=clientAuth']);
  // written last: its presence says the set is complete
  writeFileSync(files.serverKeyStore, readFileSync(join(tls, 'server.key'), 'utf8') + readFileSync(join(tls, 'server.crt'), 'utf8'), { mode: 0o600 });
  return files;
}

/** The zoo.cfg lines of a `secureClientPort` on 127.0.0.1 (Netty, TLS 1.2+, client certificate required). */
export function secureClientPortConfig(port: number, files: ZookeeperTlsFiles): string[] {
  return [
    `secureClientPort=${port}`,
    'secureClientPortAddress=127.0.0.1',
    // only the Netty connection factory speaks TLS; it serves the plain clientPort too
    'serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory',
    `ssl.keyStore.location=${files.serverKeyStore}`,
    'ssl.keyStore.type=PEM',
    `ssl.trustStore.location=${files.caFile}`,
    'ssl.trustStore.type=PEM',
    'ssl.clientAuth=need',
  ];
}
