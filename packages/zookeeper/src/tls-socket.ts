/**
 * TLS under node-zookeeper-client, which opens only plain sockets (`net.connect`
 * in its ConnectionManager; its issue #40). Chosen over a fork (one more package
 * to keep, for 15 lines) and over a local TLS bridge (a loopback port any local
 * process could use to borrow the client certificate, and an error that reaches
 * the library only as a closed socket): the connection manager of each client
 * gets its own `connect`, the library's own logic with `tls.connect`, and the
 * library reads and writes the TLS socket as it would a plain one.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { ConfigurationError, ErrorCode, type Logger, RegistryError } from '@rollcall/core';
import type { Client } from 'node-zookeeper-client';
import { BACKEND } from './errors.js';
import type { ZookeeperTlsOptions } from './options.js';

/** The TLS material read from the option files, before anything is contacted. */
export interface ZkTlsMaterial {
  ca?: string;
  cert?: string;
  key?: string;
  servername?: string;
  rejectUnauthorized: boolean;
}

/** The connection manager's members this file uses (node-zookeeper-client 1.1.x). */
interface ConnectionManager {
  socket?: TLSSocket;
  setState(state: number): void;
  findNextServer(callback: (server: { host: string; port: number }) => void): void;
  onSocketConnected(): void;
  onSocketData(data: Buffer): void;
  onSocketDrain(): void;
  onSocketClosed(hadError: boolean): void;
  onSocketError(error: Error): void;
  connect(): void;
}

/** The library's STATES.CONNECTING. */
const CONNECTING = 1;

/** Codes of a certificate that does not verify, or a TLS handshake that failed. */
const TLS_TRUST = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS|ERR_SSL/;

/** Reads the PEM files of enabled TLS, or undefined when TLS is off. An unreadable file is INVALID_CONFIG naming its key. */
export function readZkTls(tls: ZookeeperTlsOptions): ZkTlsMaterial | undefined {
  if (!tls.enabled) return undefined;
  const read = (key: 'caFile' | 'certFile' | 'keyFile'): string | undefined => {
    const file = tls[key];
    if (file === undefined) return undefined;
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigurationError(`registry.zookeeper.tls.${key}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`, {
        key: `registry.zookeeper.tls.${key}`,
        backend: BACKEND,
        cause: err,
      });
    }
  };
  const material: ZkTlsMaterial = { rejectUnauthorized: tls.rejectUnauthorized };
  const ca = read('caFile');
  const cert = read('certFile');
  const key = read('keyFile');
  if (ca !== undefined) material.ca = ca;
  if (cert !== undefined) material.cert = cert;
  if (key !== undefined) material.key = key;
  if (tls.servername !== undefined) material.servername = tls.servername;
  return material;
}

/**
 * Says, once per connect, that TLS is on without verifying the server
 * (`tls.rejectUnauthorized=false`): encrypted, but anyone on the path can pose
 * as the server and read the digest password.
 */
export function warnUnverifiedZkTls(logger: Logger, tls: ZookeeperTlsOptions): void {
  if (!tls.enabled || tls.rejectUnauthorized) return;
  logger.warn(
    { backend: BACKEND, key: 'registry.zookeeper.tls.rejectUnauthorized' },
    "[rollcall] [zookeeper] TLS without verifying the server's certificate (registry.zookeeper.tls.rejectUnauthorized=false): anyone on the path can pose as the server and read the digest password; give registry.zookeeper.tls.caFile instead",
  );
}

/**
 * The error a failed TLS connection to `server` means: INVALID_CONFIG naming the
 * key to fix when the certificate did not verify, else undefined (the server is
 * down or not speaking TLS: the library tries the next one). The message holds
 * the server and Node's error code only.
 */
export function tlsFailure(server: string, error: unknown): ConfigurationError | undefined {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string' || !TLS_TRUST.test(code)) return undefined;
  const key = code === 'ERR_TLS_CERT_ALTNAME_INVALID' ? 'registry.zookeeper.tls.servername' : 'registry.zookeeper.tls.caFile';
  return new ConfigurationError(`${key}: the TLS certificate of ZooKeeper at ${server} was not trusted (${code})`, { key, backend: BACKEND, cause: error });
}

/**
 * Makes `client` connect over TLS: replaces its connection manager's `connect`
 * with the library's own steps (next server, socket, handlers) on `tls.connect`,
 * sending the ConnectRequest once the handshake is done rather than at TCP
 * connect. `onError` hears every socket error with the server's `host:port`.
 * The library's connect timer is left out: the session's handshake watch
 * (client.ts) cuts a server that does not answer.
 */
export function useTlsSocket(client: Client, material: ZkTlsMaterial, onError: (server: string, error: Error) => void): void {
  const cm = (client as unknown as { connectionManager?: ConnectionManager }).connectionManager;
  const missing = ['setState', 'findNextServer', 'onSocketConnected', 'onSocketData', 'onSocketDrain', 'onSocketClosed', 'onSocketError'].find(
    (name) => typeof (cm as unknown as Record<string, unknown> | undefined)?.[name] !== 'function',
  );
  if (!cm || missing) {
    throw new RegistryError(ErrorCode.INTERNAL, `node-zookeeper-client has no ConnectionManager.${missing ?? ''} to put TLS under: this @rollcall/zookeeper supports its 1.1.x`, { backend: BACKEND });
  }
  cm.connect = function (this: ConnectionManager) {
    this.setState(CONNECTING);
    this.findNextServer((server) => {
      const options: ConnectionOptions = { host: server.host, port: server.port, ...material };
      // SNI carries a host name, never an address (Node warns); the address is still checked against the certificate.
      if (material.servername === undefined && isIP(server.host) === 0) options.servername = server.host;
      const socket = tlsConnect(options);
      this.socket = socket;
      socket.setNoDelay();
      // Looked up at each event, not bound now: client.ts replaces some of them on a client it abandons.
      socket.on('secureConnect', () => this.onSocketConnected());
      socket.on('data', (data: Buffer) => this.onSocketData(data));
      socket.on('drain', () => this.onSocketDrain());
      socket.on('close', (hadError: boolean) => this.onSocketClosed(hadError));
      socket.on('error', (error: Error) => {
        onError(`${server.host}:${server.port}`, error);
        this.onSocketError(error);
      });
    });
  };
}
