import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ChildHandle, WaitTimeoutError } from '../src/index.js';

const entry = fileURLToPath(new URL('./fixtures/echo-child.mjs', import.meta.url));
type Command = { kind: 'echo' | 'fail' | 'report' | 'hang'; text?: string } | { kind: 'exit'; code: number };
type Event = { seen: string };

describe.each(['ipc', 'lines'] as const)('a child over the %s transport', (transport) => {
  let child: ChildHandle<Command, Event> | undefined;
  afterEach(async () => {
    await child?.kill();
    child = undefined;
  });

  const start = () => ChildHandle.start<Command, Event>({ entry, args: [transport], transport, stderr: 'pipe', label: 'the echo child' }, 10_000, { greeting: 'hi' });

  it('takes its init, answers commands, and reports events in order', async () => {
    child = await start();
    await expect(child.request({ kind: 'echo', text: 'there' }, 5_000)).resolves.toBe('hi there');
    await child.request({ kind: 'report', text: 'one' }, 5_000);
    await child.request({ kind: 'report', text: 'two' }, 5_000);
    const { event } = await child.event((e) => e.seen === 'two', 5_000, 'the second report');
    expect(event).toEqual({ seen: 'two' });
    expect(child.events.map((e) => e.event.seen)).toEqual(['one', 'two']);
  });

  it("a failure crosses with its code; a command not answered in time is a WaitTimeoutError naming the child", async () => {
    child = await start();
    await expect(child.request({ kind: 'fail' }, 5_000)).rejects.toMatchObject({ code: 'PERMISSION_DENIED', message: expect.stringContaining('refused on purpose') });
    const late = await child.request({ kind: 'hang' }, 100).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(WaitTimeoutError);
    expect((late as Error).message).toContain('the echo child');
  });

  it('its exit ends what is pending and is reported with its code', async () => {
    child = await start();
    const pending = child.request({ kind: 'exit', code: 7 }, 5_000);
    await expect(pending).rejects.toThrow(/the echo child ended/);
    await expect(child.exited).resolves.toEqual({ code: 7, signal: null });
    expect(child.alive).toBe(false);
  });
});
