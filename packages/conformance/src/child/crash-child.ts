/**
 * The crash child: a real process the suite forks, drives over IPC, and kills
 * with SIGKILL. It builds a Registry (on its own connection, or on the parent's
 * store over IPC), does what it is told (announce, update, campaign, lock) and
 * reports every leadership and lock event back. It never cleans up: being
 * killed mid-lease is the point.
 */
import { type Clock, createRegistry, type MemberHandle, type Registry, type RegistryConfigInput, RegistryError, systemClock } from '@rollcall/core';
import { IpcRecordStore, type IpcChannel } from '../ipc-store.js';
import { isControl, type ChildCommand, type ChildEvent, type ChildMessage, type ParentMessage } from './protocol.js';

if (!process.send) {
  console.error('crash-child must be started by the conformance suite with an IPC channel');
  process.exit(2);
}

const channel = process as unknown as IpcChannel;
const send = (message: ChildMessage) => process.send!(message);
const report = (event: ChildEvent) => send({ ch: 'ctl', kind: 'event', event });
const describe = (err: unknown) => ({ code: err instanceof RegistryError ? err.code : undefined, message: String((err as Error)?.message ?? err) });

let registry: Registry | undefined;
const members = new Map<string, MemberHandle>();
const locks: unknown[] = []; // held so they keep renewing until the kill

// The parent going away (test ended, or it crashed) ends the child too.
process.on('disconnect', () => process.exit(0));

async function run(command: ChildCommand): Promise<unknown> {
  const r = registry!;
  switch (command.op) {
    case 'announce': {
      const handle = await r.announce({ role: command.role, id: command.id, payload: command.payload });
      members.set(`${command.role}/${command.id}`, handle);
      return undefined;
    }
    case 'update': {
      const handle = members.get(`${command.role}/${command.id}`);
      if (!handle) throw new Error(`no member ${command.role}/${command.id} announced`);
      await handle.update(command.payload);
      return undefined;
    }
    case 'campaign': {
      const leadership = r.campaign(command.election);
      leadership.on('elected', (e) => report({ type: 'elected', election: e.election, fencingToken: e.fencingToken }));
      leadership.on('lost', (e) => report({ type: 'lost', election: e.election, fencingToken: e.fencingToken, reason: e.reason }));
      return undefined;
    }
    case 'lock': {
      const handle = await r.lock(command.name);
      locks.push(handle);
      handle.signal.addEventListener('abort', () => report({ type: 'lockLost', name: command.name, fencingToken: handle.fencingToken, reason: String((handle.signal.reason as { reason?: string })?.reason) }));
      report({ type: 'lockAcquired', name: command.name, fencingToken: handle.fencingToken });
      return handle.fencingToken;
    }
  }
}

/** A registry on the parent's store, carried over the IPC channel. */
function onParentStore(config: Record<string, unknown>, store: IpcRecordStore, clock: Clock): Promise<Registry> {
  // Data off the IPC channel: its type is the store's backend, known only at run time.
  return createRegistry({ ...config, type: store.backend } as RegistryConfigInput, { store, clock });
}

channel.on('message', (raw: unknown) => {
  if (!isControl(raw)) return;
  const message = raw as ParentMessage;
  if (message.kind === 'init') {
    const { init } = message;
    const skew = init.wallSkewMs ?? 0;
    const clock: Clock = { now: systemClock.now, setTimeout: systemClock.setTimeout, wallNow: () => new Date(Date.now() + skew) };
    const opening = init.kind === 'config' ? createRegistry(init.config, { clock }) : onParentStore(init.config, new IpcRecordStore(channel, init.store), clock);
    opening.then(
      (opened) => {
        registry = opened;
        send({ ch: 'ctl', kind: 'ready' });
      },
      (err: unknown) => send({ ch: 'ctl', kind: 'fatal', error: describe(err) }),
    );
  } else if (message.kind === 'command') {
    run(message.command).then(
      (value) => send({ ch: 'ctl', kind: 'reply', id: message.id, ok: true, ...(value === undefined ? {} : { value: value as number }) }),
      (err: unknown) => send({ ch: 'ctl', kind: 'reply', id: message.id, ok: false, error: describe(err) }),
    );
  }
});
