import { systemClock, type Clock, type Timer } from '@rollcall/core';
import { Backoff } from '@rollcall/core/spi';
import type { ChangeSignal, ChangeSignalHandlers } from '@rollcall/sql';
import { type Client, createClient } from './client.js';

/** The wait before listening again after the connection was lost: from 100 ms, doubling to 5 s, up to half of each taken off at random. */
const RELISTEN = { initialMs: 100, maxMs: 5_000, jitter: 0.5 };

/**
 * The change feed: one connection of the process, outside the pool, that
 * LISTENs on the change table's channel. Writers notify it in their
 * transaction, so the poller reads the change table once per committed write
 * instead of once per interval; an idle process sends only this connection's
 * `SELECT 1` every keep-alive interval. When the connection is lost the poller
 * falls back to its interval until a new one listens.
 */
export class NotifyListener implements ChangeSignal {
  private handlers: ChangeSignalHandlers | undefined;
  private current: Client | undefined;
  private readonly backoff: Backoff;
  private retryTimer: Timer | undefined;
  private keepAliveTimer: Timer | undefined;
  private closed = false;
  private isListening = false;
  /** Statements sent on the listening connection (LISTEN and keep-alives), for tests and benchmarks. */
  statements = 0;

  constructor(
    private readonly config: Record<string, unknown>,
    private readonly channel: string,
    private readonly keepAliveIntervalMs: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.backoff = new Backoff({ clock, ...RELISTEN });
  }

  /** True while a connection LISTENs: the poller then reads only when notified. */
  get listening(): boolean {
    return this.isListening;
  }

  start(handlers: ChangeSignalHandlers): void {
    if (this.handlers || this.closed) return;
    this.handlers = handlers;
    void this.listen();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.isListening = false;
    this.retryTimer?.cancel();
    this.keepAliveTimer?.cancel();
    const client = this.current;
    this.current = undefined;
    await client?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    if (this.closed) return;
    const client = createClient(this.config);
    this.current = client;
    client.on('notification', (message) => {
      if (client === this.current && message.channel === this.channel) this.handlers?.changed();
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('the listening connection ended')));
    try {
      await client.connect();
      this.statements++;
      await client.query(`LISTEN "${this.channel}"`);
    } catch (err) {
      this.lost(client, err);
      return;
    }
    if (client !== this.current) return;
    this.backoff.reset();
    this.isListening = true;
    this.handlers?.up();
    this.scheduleKeepAlive(client);
  }

  private scheduleKeepAlive(client: Client): void {
    this.keepAliveTimer = this.clock.setTimeout(() => {
      if (client !== this.current) return;
      this.statements++;
      // A connection that died without a word (a cut cable, a frozen server) fails here, within query_timeout.
      client.query('SELECT 1').then(
        () => {
          if (client === this.current) this.scheduleKeepAlive(client);
        },
        (err: unknown) => this.lost(client, err),
      );
    }, this.keepAliveIntervalMs);
  }

  /** The connection is gone or unusable: report it once, drop it and listen again after a backoff. */
  private lost(client: Client, err: unknown): void {
    if (client !== this.current || this.closed) return;
    this.current = undefined;
    this.isListening = false;
    this.keepAliveTimer?.cancel();
    client.end().catch(() => undefined);
    this.handlers?.down(err);
    this.retryTimer = this.backoff.schedule(() => void this.listen());
  }
}
