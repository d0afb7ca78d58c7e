import { UnavailableError } from '@rollcall/core';
import { MemoryStore, settle } from '@rollcall/core/testing';

/**
 * A memory store whose calls fail UNAVAILABLE while `refusing`, its watch still
 * open and delivering: a connection whose requests time out while its stream stays up.
 */
export class RefusingStore extends MemoryStore {
  refusing = false;
  override async get(...args: Parameters<MemoryStore['get']>): ReturnType<MemoryStore['get']> {
    this.failWhileRefusing();
    return super.get(...args);
  }
  override async create(...args: Parameters<MemoryStore['create']>): ReturnType<MemoryStore['create']> {
    this.failWhileRefusing();
    return super.create(...args);
  }
  override async update(...args: Parameters<MemoryStore['update']>): ReturnType<MemoryStore['update']> {
    this.failWhileRefusing();
    return super.update(...args);
  }
  override async delete(...args: Parameters<MemoryStore['delete']>): ReturnType<MemoryStore['delete']> {
    this.failWhileRefusing();
    return super.delete(...args);
  }
  override async list(...args: Parameters<MemoryStore['list']>): ReturnType<MemoryStore['list']> {
    this.failWhileRefusing();
    return super.list(...args);
  }
  private failWhileRefusing(): void {
    if (this.refusing) throw new UnavailableError('requests time out', { backend: 'memory' });
  }
}

/** Lets promise continuations run, with no time passing, until `condition` holds; fails after `rounds` settles. */
export async function until(condition: () => boolean, rounds = 100): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (condition()) return;
    await settle(1);
  }
  throw new Error(`condition not reached after ${rounds} settles: ${condition.toString()}`);
}
