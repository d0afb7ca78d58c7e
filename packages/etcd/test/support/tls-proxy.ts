import { connect, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';

/**
 * TLS in front of the plain test etcd, as a TLS-terminating sidecar would be:
 * clients speak gRPC over TLS (client certificate required when `requireClientCert`),
 * the proxy forwards the plaintext to etcd.
 */
export async function tlsTerminatingProxy(target: string, pem: { key: Buffer; cert: Buffer; ca: Buffer }, requireClientCert: boolean): Promise<{ endpoint: string; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const server = createTlsServer({ key: pem.key, cert: pem.cert, ca: pem.ca, requestCert: requireClientCert, rejectUnauthorized: requireClientCert, ALPNProtocols: ['h2'] }, (client) => {
    const upstream = connect(Number(port), hostname);
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return {
    endpoint: `https://127.0.0.1:${address.port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
