import type { ItemOwner } from './node.js';

/**
 * The scheduler's task table, kept by the demo: which worker incarnation owns
 * each item. It is the fenced resource of docs/failover.md: a move is taken
 * only under a fencing token no smaller than the largest seen and only from
 * the item's owner (so a repeated move changes nothing), and once a failover of
 * an incarnation begins, that incarnation's runs are counted as violations —
 * the number the demo shows to be 0.
 */
export class TaskTable {
  private readonly owners = new Map<string, ItemOwner>();
  private readonly failedOver = new Set<string>();
  /** Moves asked for each item away from each incarnation (repeats included): `item from incarnation` → count. */
  private readonly moves = new Map<string, number>();
  private maxToken = 0;
  /** Item runs accepted from their owner. */
  runs = 0;
  /** Item runs reported by an incarnation after its failover began. */
  runsAfterFailover = 0;
  /** Moves refused for a fencing token smaller than one seen. */
  refusedMoves = 0;

  assign(item: string, owner: ItemOwner): void {
    this.owners.set(item, owner);
  }

  /** The failover of `dead` began: its tasks are being handed on, so it may run nothing more. */
  failoverBegins(dead: ItemOwner): void {
    this.failedOver.add(dead.incarnation);
  }

  /** Moves `item` from `from` to `to`: `moved`, `unchanged` (not `from`'s any more: a repeat) or `refused` (a deposed leader's token). */
  move(item: string, from: ItemOwner, to: ItemOwner, fencingToken: number): 'moved' | 'unchanged' | 'refused' {
    const key = `${item} from ${from.id} #${from.incarnation}`;
    this.moves.set(key, (this.moves.get(key) ?? 0) + 1);
    if (fencingToken < this.maxToken) return (this.refusedMoves++, 'refused');
    this.maxToken = fencingToken;
    this.failoverBegins(from);
    if (this.owners.get(item)?.incarnation !== from.incarnation) return 'unchanged';
    this.owners.set(item, to);
    return 'moved';
  }

  /** A worker incarnation ran `items`. */
  ran(owner: ItemOwner, items: readonly string[]): void {
    for (const item of items) {
      if (this.failedOver.has(owner.incarnation)) this.runsAfterFailover++;
      else if (this.owners.get(item)?.incarnation === owner.incarnation) this.runs++;
    }
  }

  /** The items an incarnation owns now. */
  ownedBy(incarnation: string): string[] {
    return [...this.owners].filter(([, o]) => o.incarnation === incarnation).map(([item]) => item);
  }

  get size(): number {
    return this.owners.size;
  }

  get moveCount(): number {
    return this.moves.size;
  }

  /** Moves asked twice away from one incarnation: none, when each failover ran once. */
  movedTwice(): string[] {
    return [...this.moves].filter(([, n]) => n > 1).map(([key]) => key);
  }
}
