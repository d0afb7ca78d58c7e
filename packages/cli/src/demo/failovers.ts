import { performance } from 'node:perf_hooks';
import { shortIncarnation } from '../output.js';
import type { DemoNode } from './cluster.js';
import type { ItemOwner, NodeMessage } from './node.js';
import { TaskTable } from './task-table.js';

/** One dead worker incarnation's failover, as the leading master reported it. */
export interface FailoverRecord {
  dead: ItemOwner;
  by: string;
  reason: string;
  /** Handler runs reported (1 when it ran once). */
  runs: number;
  /** `item→worker` for each move the task table took. */
  moved: string[];
  /** Acknowledgements reported (1 when it was failed over once). */
  acks: number;
  ackedAt?: number;
}

/** A worker incarnation that found itself lost and stopped its items. */
export interface StoppedRecord {
  id: string;
  incarnation: string;
  reason: string;
  items: string[];
  at: number;
}

/**
 * What the nodes report about items and failovers, applied to the demo's
 * {@link TaskTable}: workers' incarnations and runs, each failover's start,
 * moves and acknowledgement, and the workers that stopped when lost. A move
 * the table takes is handed to its new worker (`take`).
 */
export class FailoverLedger {
  readonly table = new TaskTable();
  readonly failovers = new Map<string, FailoverRecord>();
  readonly stopped: StoppedRecord[] = [];
  /** Each worker's current incarnation. */
  readonly incarnations = new Map<string, string>();

  constructor(
    private readonly nodes: ReadonlyMap<string, DemoNode>,
    private readonly log: (line: string) => void,
  ) {}

  /** Gives `items` to a worker's current incarnation. */
  assign(id: string, items: readonly string[]): void {
    const incarnation = this.incarnations.get(id);
    if (incarnation === undefined) return;
    for (const item of items) {
      this.table.assign(item, { id, incarnation });
      this.nodes.get(id)?.proc.tell({ op: 'take', item, incarnation });
    }
  }

  /** Applies one node report. */
  apply(m: NodeMessage): void {
    switch (m.type) {
      case 'ready':
        if (m.incarnation) this.incarnations.set(m.id, m.incarnation);
        return;
      case 'reannounced':
        this.incarnations.set(m.id, m.incarnation);
        return this.log(`${m.id} announced itself again as #${shortIncarnation(m.incarnation)}, with no items`);
      case 'ran':
        return this.table.ran({ id: m.id, incarnation: m.incarnation }, m.items);
      case 'stopped':
        this.stopped.push({ id: m.id, incarnation: m.incarnation, reason: m.reason, items: m.items, at: performance.now() });
        return this.log(`${m.id} #${shortIncarnation(m.incarnation)} is lost (${m.reason}): it stops ${m.items.join(' ') || 'nothing'} instead of running`);
      case 'failover': {
        this.table.failoverBegins(m.dead);
        const record = this.failovers.get(m.dead.incarnation) ?? { dead: m.dead, by: m.id, reason: m.reason, runs: 0, moved: [], acks: 0 };
        record.runs++;
        record.by = m.id;
        this.failovers.set(m.dead.incarnation, record);
        return this.log(`${m.id} fails ${m.dead.id} #${shortIncarnation(m.dead.incarnation)} over (${m.reason}${m.resumed ? ', resumed' : ''}, token ${m.fencingToken}): ${m.items.join(' ') || 'no items'}`);
      }
      case 'moved': {
        const outcome = this.table.move(m.item, m.from, m.to, m.fencingToken);
        if (outcome === 'moved') {
          this.failovers.get(m.from.incarnation)?.moved.push(`${m.item}→${m.to.id}`);
          this.nodes.get(m.to.id)?.proc.tell({ op: 'take', item: m.item, incarnation: m.to.incarnation });
        } else if (outcome === 'refused') this.log(`task table refused ${m.id}'s move of ${m.item}: fencing token ${m.fencingToken} is stale`);
        return;
      }
      case 'acknowledged': {
        const record = this.failovers.get(m.dead.incarnation);
        if (!record) return;
        record.acks++;
        record.ackedAt ??= performance.now();
        return this.log(`${m.dead.id} #${shortIncarnation(m.dead.incarnation)} failed over: ${record.moved.join(' ') || 'no items'}`);
      }
    }
  }

  /** The acknowledged failover of `id`'s incarnation `incarnation`, once acknowledged. */
  acked(incarnation: string | undefined): FailoverRecord | undefined {
    const record = incarnation === undefined ? undefined : this.failovers.get(incarnation);
    return record && record.acks > 0 ? record : undefined;
  }
}
