import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import { TcpProxy } from '@rollcall/tools/testenv';
import { NotifyListener } from '../src/watch.js';
import { adminClient, postgres } from './support/postgres.js';

const KEEP_ALIVE_MS = 500;
const REQUEST_TIMEOUT_MS = 1000;
/** Timers on this shared 2-core machine fire late; the margin is for that, not for the listener. */
const SCHEDULING_MARGIN_MS = 1000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** What a listener told its poller, with the time of each `down`. */
function recorder() {
  const events = { up: 0, changed: 0, down: [] as number[] };
  return { events, handlers: { up: () => void events.up++, changed: () => void events.changed++, down: () => void events.down.push(performance.now()) } };
}

describe('postgres: a half-open listening connection', () => {
  it(`is noticed within keepAliveIntervalMs + requestTimeoutMs (${KEEP_ALIVE_MS} + ${REQUEST_TIMEOUT_MS} ms here), and a new connection listens`, async () => {
    const env = postgres();
    const proxy = await TcpProxy.start({ host: env.host, port: env.port });
    cleanups.push(() => proxy.close());
    const channel = `half_open_${process.pid}`;
    // The dialect's settings for the listening connection: the client's query timeout is the request timeout.
    const listener = new NotifyListener(
      { host: '127.0.0.1', port: proxy.port, user: env.user, password: env.password, database: env.database, connectionTimeoutMillis: REQUEST_TIMEOUT_MS, query_timeout: REQUEST_TIMEOUT_MS },
      channel,
      KEEP_ALIVE_MS,
    );
    cleanups.push(() => listener.close());
    const { events, handlers } = recorder();
    listener.start(handlers);
    await waitFor(() => listener.listening, 10_000, 'the listener to listen');
    const admin = await adminClient();
    cleanups.push(() => admin.end());
    await admin.query(`NOTIFY "${channel}"`);
    await waitFor(() => events.changed === 1, 10_000, 'the first notification');

    // Every byte of the open connection dropped, no FIN, no RST: to the client the socket is still up.
    const cutAt = performance.now();
    proxy.cut('blackhole', { scope: 'open' });
    await waitFor(() => events.down.length === 1, 10_000, 'the listener to notice the dead connection');
    expect(events.down[0]! - cutAt).toBeLessThanOrEqual(KEEP_ALIVE_MS + REQUEST_TIMEOUT_MS + SCHEDULING_MARGIN_MS);
    expect(listener.listening).toBe(false);

    // New connections go through: the listener listens again and hears the next write.
    await waitFor(() => listener.listening && events.up === 2, 10_000, 'a new listening connection');
    await admin.query(`NOTIFY "${channel}"`);
    await waitFor(() => events.changed === 2, 10_000, 'a notification on the new connection');
  });
});
