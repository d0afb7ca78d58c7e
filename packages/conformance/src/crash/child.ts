/**
 * The crash child: a real process the suite starts through the child-process
 * harness, drives with commands, and kills with SIGKILL. It builds a Registry
 * (on its own connection, or on the parent's store over IPC), does what it is
 * told (announce, update, campaign, lock) and reports every leadership and
 * lock event back. It never cleans up: being killed mid-lease is the point.
 */
import { type Clock, createRegistry, type MemberHandle, type Registry, type RegistryConfigInput, systemClock } from '@rollcall/core';
import { serveParent } from '@rollcall/child-harness';
import { IpcRecordStore } from './ipc-store.js';
import type { CrashCommand, CrashEvent, CrashInit } from './protocol.js';

let registry: Registry | undefined;
const members = new Map<string, MemberHandle>();
const locks: unknown[] = []; // held so they keep renewing until the kill

async function run(command: CrashCommand): Promise<number | undefined> {
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
      leadership.on('elected', (e) => parent.report({ type: 'elected', election: e.election, fencingToken: e.fencingToken }));
      leadership.on('lost', (e) => parent.report({ type: 'lost', election: e.election, fencingToken: e.fencingToken, reason: e.reason }));
      return undefined;
    }
    case 'lock': {
      const handle = await r.lock(command.name);
      locks.push(handle);
      handle.signal.addEventListener('abort', () => parent.report({ type: 'lockLost', name: command.name, fencingToken: handle.fencingToken, reason: String((handle.signal.reason as { reason?: string })?.reason) }));
      parent.report({ type: 'lockAcquired', name: command.name, fencingToken: handle.fencingToken });
      return handle.fencingToken;
    }
  }
}

/** A registry on the parent's store, carried over the IPC channel. */
function onParentStore(config: Record<string, unknown>, store: IpcRecordStore, clock: Clock): Promise<Registry> {
  // Data off the IPC channel: its type is the store's backend, known only at run time.
  return createRegistry({ ...config, type: store.backend } as RegistryConfigInput, { store, clock });
}

function open(init: CrashInit): void {
  const skew = init.wallSkewMs ?? 0;
  const clock: Clock = { now: systemClock.now, setTimeout: systemClock.setTimeout, wallNow: () => new Date(Date.now() + skew) };
  const opening = init.kind === 'config' ? createRegistry(init.config, { clock }) : onParentStore(init.config, new IpcRecordStore(parent.channel, init.store), clock);
  opening.then(
    (opened) => {
      registry = opened;
      parent.ready();
    },
    (err: unknown) => parent.fatal(err),
  );
}

// The parent going away (test ended, or it crashed) ends the child too: serveParent's default.
const parent = serveParent<CrashInit, CrashCommand, CrashEvent>({ onInit: open, onCommand: run });
