import type { Registry } from '@rollcall/core';
import type { Instruments } from './instruments.js';

/** `rollcall_lock_held`, `rollcall_lock_fencing_token` and `rollcall_lock_changes_total`, from the registry's `lockAcquired` and `lockLost`. */
export function trackLocks(registry: Registry, m: Instruments, lockLabel: (name: string) => string): () => void {
  const offs = [
    registry.on('lockAcquired', ({ name, fencingToken }) => {
      const lock = lockLabel(name);
      m.lockHeld.inc({ lock });
      m.lockFencingToken.set({ lock }, fencingToken);
      m.lockChanges.inc({ lock, event: 'acquired' });
    }),
    registry.on('lockLost', ({ name, reason }) => {
      const lock = lockLabel(name);
      m.lockHeld.dec({ lock });
      m.lockChanges.inc({ lock, event: 'lost', reason });
    }),
  ];
  return () => offs.forEach((off) => off());
}
