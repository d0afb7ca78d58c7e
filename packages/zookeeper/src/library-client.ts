/**
 * The node-zookeeper-client 1.1.x client a session uses: how one is made, and
 * what this backend reaches into it for, in one place — the library has had
 * no release in years and exposes neither the zxid of a reply, nor a
 * handshake timeout, nor a way to stop a client that keeps reconnecting an
 * expired session.
 */
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { useTlsSocket, type ZkTlsMaterial } from './tls-socket.js';

/** What a client is made with. */
export interface ClientSettings {
  connectString: string;
  sessionTimeoutMs: number;
  auth?: { username: string; password: string } | undefined;
  /** TLS to every server; absent: plain sockets. */
  tls?: ZkTlsMaterial | undefined;
}

/** A client not yet connected; `onTlsError` hears each TLS socket error with the server's `host:port`. */
export function newClient(settings: ClientSettings, onTlsError: (server: string, error: Error) => void): Client {
  const client = zookeeper.createClient(settings.connectString, {
    sessionTimeout: settings.sessionTimeoutMs,
    // The library waits up to this long (random) after trying every server once.
    spinDelay: 250,
    retries: 0,
  });
  if (settings.tls) useTlsSocket(client, settings.tls, onTlsError);
  if (settings.auth) client.addAuthInfo('digest', Buffer.from(`${settings.auth.username}:${settings.auth.password}`, 'utf8'));
  return client;
}

/** The connection manager's members read here, narrowed to what is read. */
interface ConnectionManager {
  /** The zxid of the last reply header, set just before that reply's callback runs. */
  zxid?: Buffer;
  /** 1 while connecting. */
  state?: number;
  socket?: { destroy(): void };
  connect?: () => void;
  onSocketConnected?: () => void;
}

/** The library's STATES.CONNECTING. */
const CM_CONNECTING = 1;

const managerOf = (client: Client) => (client as unknown as { connectionManager?: ConnectionManager }).connectionManager;

/** The zxid of the reply whose callback is running now. */
export function replyZxid(client: Client): Buffer | undefined {
  return managerOf(client)?.zxid;
}

/** The client's current socket, if any. */
export function currentSocket(client: Client): { destroy(): void } | undefined {
  return managerOf(client)?.socket;
}

/** Whether the client is opening a connection (its handshake not answered yet). */
export function isConnecting(client: Client): boolean {
  return managerOf(client)?.state === CM_CONNECTING;
}

/** Closes the current socket; the library then reports a disconnect. */
export function destroySocket(client: Client): void {
  managerOf(client)?.socket?.destroy();
}

/** Stops a client for good: the library would otherwise keep reconnecting an abandoned session. */
export function abandonClient(client: Client): void {
  client.removeAllListeners('state');
  const cm = managerOf(client);
  if (cm) {
    cm.connect = () => {};
    // A connect already scheduled (the library's spin delay) still opens a socket: close it at once.
    cm.onSocketConnected = function (this: ConnectionManager) {
      this.socket?.destroy();
    };
  }
  try {
    client.close();
  } catch {
    // already closed
  }
  cm?.socket?.destroy();
}
