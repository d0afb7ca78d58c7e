/**
 * The backend's client (every backend keeps it in `client.ts`): one ZooKeeper
 * session over node-zookeeper-client, which this file enforces itself: it pings,
 * reports suspended and lost by its own clock, and starts a new session after a
 * lost one, because the library keeps retrying a session the server has expired.
 */
import zookeeper from 'node-zookeeper-client';
import type { Client, State } from 'node-zookeeper-client';
import { type Clock, type Logger, type RegistryError, type Timer, UnavailableError } from '@rollcall/core';
import { Emitter, type StoreSessionState } from '@rollcall/core/spi';
import { BACKEND, mapError, ZK, zkCode } from './errors.js';
import { abandonClient, currentSocket, destroySocket, isConnecting, newClient, replyZxid } from './library-client.js';
import { tlsFailure, type ZkTlsMaterial } from './tls-socket.js';

interface Waiter {
  resume(): void;
  abort(error: RegistryError): void;
}

export interface SessionOptions {
  connectString: string;
  sessionTimeoutMs: number;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  auth?: { username: string; password: string } | undefined;
  /** TLS to every server (tls-socket.ts); absent: plain sockets. */
  tls?: ZkTlsMaterial | undefined;
  clock: Clock;
  logger: Logger;
  /** Hosts in the connect string: the handshake timeout per server is the session timeout divided among them. */
  hostCount: number;
}

interface SessionEvents {
  state: StoreSessionState;
  /** The connection dropped, the session was lost, or the store closed: open watches end. */
  drop: RegistryError;
  connected: undefined;
}

type Phase = 'connecting' | 'connected' | 'suspended' | 'lost' | 'closed';

/**
 * One ZooKeeper session at a time, with its deadline enforced here: the
 * library stays "connected" on a silent socket and retries an expired session
 * forever, so this class pings, declares the connection dropped when the
 * server stops answering, reports `suspended` at once, `lost` once the
 * negotiated session timeout has passed since the send time of the last
 * request the server answered (no later than the server can expire it), and
 * then starts a new session.
 */
export class ZkSession {
  private client!: Client;
  private generation = 0;
  private phase: Phase = 'connecting';
  private negotiatedMs: number;
  /** Send time of the newest request the server answered: the server had heard from us by then. */
  private lastAnsweredSentAt = 0;
  /** When the newest answer arrived. */
  private lastAnswerAt = 0;
  private pingTimer: Timer | undefined;
  private lostTimer: Timer | undefined;
  private handshakeTimer: Timer | undefined;
  private pingInFlight = false;
  private readonly events: Emitter<SessionEvents>;
  private sessionIdHex = '';
  /** Requests waiting for the connection to come back. */
  private readonly waiters = new Set<Waiter>();
  /** Fails the first connect at once (a certificate that does not verify), until it is settled. */
  private failStart: ((error: RegistryError) => void) | undefined;
  private lastTlsFailure = '';

  constructor(private readonly options: SessionOptions) {
    this.negotiatedMs = options.sessionTimeoutMs;
    this.events = new Emitter<SessionEvents>(options.logger);
  }

  /** Connects the first session; rejects UNAVAILABLE when none is established within `connectTimeoutMs`. */
  start(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = this.options.clock.setTimeout(() => {
        off();
        const error = new UnavailableError(`no ZooKeeper session with ${hostsOf(this.options.connectString)} within ${this.options.connectTimeoutMs} ms (connectTimeoutMs)`, { backend: BACKEND });
        void this.close().finally(() => reject(error));
      }, this.options.connectTimeoutMs);
      const off = this.onConnected(() => {
        off();
        timer.cancel();
        this.failStart = undefined;
        resolve();
      });
      this.failStart = (error) => {
        this.failStart = undefined;
        off();
        timer.cancel();
        void this.close().finally(() => reject(error));
      };
      this.connectNew();
    });
  }

  get connected(): boolean {
    return this.phase === 'connected';
  }

  /** The negotiated session timeout, milliseconds. */
  get sessionTimeoutMs(): number {
    return this.negotiatedMs;
  }

  /** The current session id, hex (for logs and tests). */
  get sessionId(): string {
    return this.sessionIdHex;
  }

  onSessionState(listener: (state: StoreSessionState) => void): () => void {
    return this.events.on('state', listener);
  }

  /** Called when the connection drops, the session is lost, or the store closes: open watches end. */
  onDrop(listener: (error: RegistryError) => void): () => void {
    return this.events.on('drop', listener);
  }

  onConnected(listener: () => void): () => void {
    return this.events.on('connected', listener);
  }

  /**
   * Runs one request on the current client, within `requestTimeoutMs`. While
   * the connection is down the request waits here, unsent, for the session to
   * come back (the library would queue it and send it whenever); it fails
   * UNAVAILABLE when the time is up. A read (`idempotent`) that loses its
   * connection mid-flight is sent again once reconnected; a write is not, as
   * it may have been applied.
   */
  call<T>(what: string, key: string | undefined, run: (client: Client, done: (error: unknown, value?: T) => void) => void, idempotent = false): Promise<T> {
    const on = `${what}${key ? ` ${key}` : ''}`;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let waiter: Waiter | undefined;
      const finish = (error: unknown, value?: T) => {
        if (settled) return;
        settled = true;
        timer.cancel();
        if (waiter) this.waiters.delete(waiter);
        if (error) reject(error);
        else resolve(value as T);
      };
      const timer = this.options.clock.setTimeout(() => {
        const why = this.phase === 'connected' ? `no answer within ${this.options.requestTimeoutMs} ms` : `not connected to ZooKeeper within ${this.options.requestTimeoutMs} ms (${this.phase})`;
        finish(new UnavailableError(`${on}: ${why}`, { backend: BACKEND }));
      }, this.options.requestTimeoutMs);
      const attempt = (retries: number) => {
        if (settled) return;
        if (this.phase === 'closed') return finish(new UnavailableError(`${on}: the store is closed`, { backend: BACKEND }));
        if (this.phase !== 'connected') {
          waiter = { resume: () => attempt(retries), abort: (error) => finish(error) };
          this.waiters.add(waiter);
          return;
        }
        waiter = undefined;
        const generation = this.generation;
        const sentAt = this.options.clock.now();
        try {
          run(this.client, (error, value) => {
            const lostConnection = isConnectionError(error) || generation !== this.generation;
            if (!lostConnection) this.answered(sentAt);
            if (settled) return;
            // The library fails pending requests before it reports the disconnect: retry once that state has settled.
            if (lostConnection && idempotent && retries > 0) return void setImmediate(() => attempt(retries - 1));
            if (lostConnection) finish(new UnavailableError(`${on}: the connection dropped before the answer`, { backend: BACKEND, cause: error }));
            else if (error) finish(mapError(error, what, key));
            else finish(undefined, value);
          });
        } catch (err) {
          finish(mapError(err, what, key));
        }
      };
      attempt(2);
    });
  }

  /** The zxid of the reply whose callback is running now (the library sets it just before). */
  replyZxid(client: Client): Buffer | undefined {
    return replyZxid(client);
  }

  /** Ends the session (CLOSE_SESSION when connected) and stops every timer. */
  async close(): Promise<void> {
    if (this.phase === 'closed') return;
    const wasConnected = this.phase === 'connected';
    this.phase = 'closed';
    this.clearTimers();
    const closedError = new UnavailableError('the store is closed', { backend: BACKEND });
    this.events.emit('drop', closedError);
    for (const waiter of [...this.waiters]) waiter.abort(closedError);
    this.waiters.clear();
    const client = this.client;
    this.generation++;
    if (!client) return;
    if (wasConnected) {
      // A clean close ends the session at once, so the server drops its watches now rather than at expiry.
      await new Promise<void>((resolve) => {
        const timer = this.options.clock.setTimeout(resolve, 1000);
        client.once('disconnected', () => {
          timer.cancel();
          resolve();
        });
        client.close();
      });
    }
    if (client) abandonClient(client);
  }

  private connectNew(): void {
    const generation = ++this.generation;
    const client = newClient(this.options, (server, error) => generation === this.generation && this.tlsError(server, error));
    client.on('state', (state: State) => {
      if (generation !== this.generation) return;
      if (state.code === zookeeper.State.SYNC_CONNECTED.code) this.connected_();
      else if (state.code === zookeeper.State.DISCONNECTED.code) this.disconnected('the connection to ZooKeeper dropped');
      else if (state.code === zookeeper.State.EXPIRED.code) this.expired();
      else if (state.code === zookeeper.State.AUTH_FAILED.code) {
        this.options.logger.error({ backend: BACKEND }, '[rollcall] [zookeeper] the server refused the digest credentials');
        this.expired();
      }
    });
    this.client = client;
    client.connect();
    this.watchHandshake(client, generation);
  }

  /** A certificate that does not verify fails the first connect at once; later, it is logged (once per cause) while the library tries the next server. */
  private tlsError(server: string, error: Error): void {
    const failure = tlsFailure(server, error);
    if (!failure) return;
    if (this.failStart) return this.failStart(failure);
    if (failure.message === this.lastTlsFailure) return;
    this.lastTlsFailure = failure.message;
    this.options.logger.error({ backend: BACKEND, key: failure.key }, `[rollcall] [zookeeper] ${failure.message}`);
  }

  /** The library has no timeout on a handshake the server never answers; this one cuts it after the session timeout split among the hosts. */
  private watchHandshake(client: Client, generation: number): void {
    const budget = Math.max(1000, Math.floor(this.options.sessionTimeoutMs / Math.max(1, this.options.hostCount)));
    let lastSocket: unknown;
    const tick = () => {
      if (generation !== this.generation || this.phase === 'closed') return;
      const socket = this.phase === 'connected' ? undefined : currentSocket(client);
      if (socket && socket === lastSocket && isConnecting(client)) socket.destroy();
      lastSocket = socket;
      this.handshakeTimer = this.options.clock.setTimeout(tick, budget);
    };
    this.handshakeTimer?.cancel();
    this.handshakeTimer = this.options.clock.setTimeout(tick, budget);
  }

  private connected_(): void {
    if (this.phase === 'closed') return;
    const previous = this.phase;
    const now = this.options.clock.now();
    this.negotiatedMs = this.client.getSessionTimeout();
    this.sessionIdHex = this.client.getSessionId().toString('hex');
    this.lastAnsweredSentAt = now;
    this.lastAnswerAt = now;
    this.phase = 'connected';
    this.lostTimer?.cancel();
    this.lostTimer = undefined;
    this.schedulePing();
    this.options.logger.info({ backend: BACKEND, sessionId: this.sessionIdHex, sessionTimeoutMs: this.negotiatedMs, after: previous }, '[rollcall] [zookeeper] session connected');
    if (previous !== 'connecting') this.events.emit('state', 'connected');
    this.events.emit('connected', undefined);
    for (const waiter of [...this.waiters]) {
      this.waiters.delete(waiter);
      waiter.resume();
    }
  }

  private disconnected(why: string): void {
    if (this.phase !== 'connected') return;
    this.phase = 'suspended';
    this.pingTimer?.cancel();
    this.pingInFlight = false;
    this.options.logger.warn({ backend: BACKEND, sessionId: this.sessionIdHex }, `[rollcall] [zookeeper] ${why}: suspended`);
    this.events.emit('state', 'suspended');
    this.events.emit('drop', new UnavailableError(why, { backend: BACKEND }));
    const untilLost = this.lastAnsweredSentAt + this.negotiatedMs - this.options.clock.now();
    this.lostTimer = this.options.clock.setTimeout(() => this.lose('the session timeout passed without reconnecting'), Math.max(0, untilLost));
  }

  private expired(): void {
    if (this.phase === 'closed') return;
    if (this.phase === 'connected') this.disconnected('the session expired');
    this.lose('the server expired the session');
  }

  private lose(why: string): void {
    if (this.phase === 'closed') return;
    const old = this.client;
    if (this.phase !== 'lost') {
      this.phase = 'lost';
      this.clearTimers();
      this.options.logger.warn({ backend: BACKEND, sessionId: this.sessionIdHex }, `[rollcall] [zookeeper] ${why}: session lost, starting a new one`);
      this.events.emit('state', 'lost');
      this.events.emit('drop', new UnavailableError(`session lost: ${why}`, { backend: BACKEND }));
    }
    if (old) abandonClient(old);
    this.connectNew();
  }

  private schedulePing(): void {
    const interval = Math.max(100, Math.floor(this.negotiatedMs / 3));
    const readTimeout = Math.floor((this.negotiatedMs * 2) / 3);
    this.pingTimer?.cancel();
    this.pingTimer = this.options.clock.setTimeout(() => {
      if (this.phase !== 'connected') return;
      if (this.options.clock.now() - this.lastAnswerAt > readTimeout) {
        // The socket is open but the server is silent: the library would wait forever.
        this.disconnected(`ZooKeeper did not answer for ${readTimeout} ms`);
        destroySocket(this.client);
        return;
      }
      if (!this.pingInFlight) {
        this.pingInFlight = true;
        const generation = this.generation;
        this.call<unknown>('ping', undefined, (client, done) => client.exists('/', done), false).then(
          () => generation === this.generation && (this.pingInFlight = false),
          () => generation === this.generation && (this.pingInFlight = false),
        );
      }
      this.schedulePing();
    }, interval);
  }

  private answered(sentAt: number): void {
    this.lastAnswerAt = this.options.clock.now();
    if (sentAt > this.lastAnsweredSentAt) this.lastAnsweredSentAt = sentAt;
  }

  private clearTimers(): void {
    this.pingTimer?.cancel();
    this.lostTimer?.cancel();
    this.handshakeTimer?.cancel();
    this.pingTimer = this.lostTimer = this.handshakeTimer = undefined;
  }

}

/** The hosts of a connect string, without its chroot. */
function hostsOf(connectString: string): string {
  const slash = connectString.indexOf('/');
  return slash < 0 ? connectString : connectString.slice(0, slash);
}

function isConnectionError(error: unknown): boolean {
  const code = zkCode(error);
  return code === ZK.CONNECTION_LOSS || code === ZK.SESSION_EXPIRED;
}
