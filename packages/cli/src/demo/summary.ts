import type { LeaderInfo } from '@rollcall/core';
import { shortIncarnation } from '../output.js';
import type { FailoverRecord, StoppedRecord } from './failovers.js';
import type { TaskTable } from './task-table.js';

/** One worker the demo ended: when it was signalled, when its peers removed it, its failover. Milliseconds from the signal. */
export interface WorkerEnd {
  id: string;
  incarnation: string;
  removedMs: number;
  reason: string;
  failover: FailoverRecord;
  ackedMs: number;
}

/** What the demo measured, for its summary. */
export interface Measured {
  where: string;
  cluster: string;
  started: number;
  first: LeaderInfo;
  last: LeaderInfo;
  victim: string;
  next: string;
  failoverMs: number;
  leaseMs: number;
  memberLeaseMs: number;
  heartbeatMs: number;
  withdraw: WorkerEnd;
  crash: WorkerEnd;
  pause: WorkerEnd & { resumedAfterMs: number; stopped: StoppedRecord };
  table: TaskTable;
  members: string[];
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** How a failover went, in words: who ran it, how often, what moved. */
function failedOver(f: FailoverRecord): string {
  const once = f.runs === 1 && f.acks === 1 ? 'once' : `${f.runs} runs, ${f.acks} acknowledgements`;
  return `its items failed over ${once} by ${f.by} (${f.moved.join(' ') || 'none'})`;
}

/**
 * The summary's rows, each saying what was measured from what: a removal is
 * counted from the signal, but a peer removes a member a whole member lease
 * after its *last heartbeat*, which came up to one heartbeat interval before
 * the signal — so a crash is noticed in less than the lease after the kill.
 */
export function summaryRows(m: Measured): [string, string][] {
  const items = m.table;
  const twice = items.movedTwice();
  const lease = `${m.memberLeaseMs / 1000} s`;
  const beat = `${m.heartbeatMs / 1000} s`;
  return [
    ['backend', `${m.where}, cluster ${m.cluster}`],
    ['processes', `3 masters, 4 workers (${m.started} started)`],
    ['leader', `${m.first.identity} (fencing token ${m.first.fencingToken}) -> ${m.last.identity} (fencing token ${m.last.fencingToken})`],
    ['leader crash', `${s(m.failoverMs)} from the SIGKILL of ${m.victim} to ${m.next} leading: a candidate takes over once the leader's record has gone unrenewed for an election lease (${m.leaseMs / 1000} s) by its own clock`],
    ['withdraw', `${m.withdraw.id} deleted its record on SIGTERM, gone for its peers ${s(m.withdraw.removedMs)} later; ${failedOver(m.withdraw.failover)}`],
    ['worker crash', `${m.crash.id} removed by its peers ${s(m.crash.removedMs)} after its SIGKILL: a member lease (${lease}) after its last heartbeat, sent up to ${beat} before the kill; ${failedOver(m.crash.failover)}, ${s(m.crash.ackedMs)} after the kill`],
    ['worker pause', `${m.pause.id} removed by its peers ${s(m.pause.removedMs)} after its SIGSTOP; ${failedOver(m.pause.failover)}; resumed (SIGCONT) ${s(m.pause.resumedAfterMs)} after the SIGSTOP, #${shortIncarnation(m.pause.incarnation)} found itself lost (${m.pause.stopped.reason}) and stopped ${m.pause.stopped.items.join(' ') || 'nothing'} instead of running them`],
    ['items', `${items.size} items; ${items.moveCount} moves, ${twice.length === 0 ? 'none asked twice of one incarnation' : `asked twice: ${twice.join(', ')}`}; ${items.runsAfterFailover} runs from a failed-over incarnation (${items.runs} accepted runs in all)`],
    ['members now', m.members.join(', ')],
  ];
}
