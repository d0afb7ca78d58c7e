import type { FollowedLog } from '@rollcall/tools/testenv';

/** One line of examples/worker.mjs's log. */
interface WorkerLine {
  at: string;
  event: 'announced' | 'elected' | 'leadershipLost' | 'stopping' | 'stopped';
  identity?: string;
  fencingToken?: number;
  reason?: string;
}

/** A member event as an observer saw it. */
export interface ObservedEvent {
  type: 'added' | 'removed';
  id: string;
  reason?: string;
}

/** One term of the election as its holder's log tells it; `to` undefined while it holds. */
interface Term {
  identity: string;
  token: number;
  from: number;
  to: number | undefined;
}

/**
 * What a rolling update must never show, one message each (empty: it passed), by the
 * soak's rules applied to what real pods reported: two leaders at one instant (terms from
 * each process's own `elected` and `leadershipLost` lines, on the node's clock, which the
 * pods share); a fencing token not above the last; a lost or phantom member event in the
 * observer's stream (an `added` for a member it holds, a `removed` for one it does not,
 * an end view unlike the members the running processes announced); a process that left
 * without a graceful stop, or whose member went by expiry instead of its withdraw.
 */
export function judgeRollout(input: { logs: readonly FollowedLog[]; viewAtStart: ReadonlySet<string>; events: readonly ObservedEvent[]; viewAtEnd: ReadonlySet<string> }): string[] {
  const violations: string[] = [];
  const terms: Term[] = [];
  const running = new Set<string>();
  const stoppedGracefully = new Set<string>();
  for (const log of input.logs) {
    const lines = log.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as WorkerLine);
    const identity = lines.find((l) => l.event === 'announced')?.identity;
    if (!identity) {
      if (log.ended) violations.push(`pod ${log.pod} (start ${log.start}) exited without announcing`);
      continue;
    }
    let open: Term | undefined;
    for (const line of lines) {
      const at = Date.parse(line.at);
      if (line.event === 'elected') terms.push((open = { identity, token: line.fencingToken!, from: at, to: undefined }));
      if (line.event === 'leadershipLost' && open) {
        open.to = at;
        open = undefined;
      }
    }
    const stopped = lines.some((l) => l.event === 'stopped');
    if (stopped) stoppedGracefully.add(identity);
    if (log.ended && !stopped) violations.push(`${identity} (pod ${log.pod}) ended without a graceful stop`);
    if (open && log.ended) violations.push(`${identity} exited while leading (token ${open.token}) without reporting the loss`);
    if (!log.ended) running.add(identity);
  }
  terms.sort((a, b) => a.from - b.from);
  for (let i = 1; i < terms.length; i++) {
    const previous = terms[i - 1]!;
    const term = terms[i]!;
    if (previous.to === undefined || previous.to > term.from) {
      violations.push(`two leaders at once: ${previous.identity} (token ${previous.token}) still leading when ${term.identity} (token ${term.token}) was elected`);
    }
    if (term.token <= previous.token) violations.push(`fencing token ${term.token} of ${term.identity} not above ${previous.token} of ${previous.identity}`);
  }
  const view = new Set(input.viewAtStart);
  for (const event of input.events) {
    if (event.type === 'added') {
      if (view.has(event.id)) violations.push(`phantom: added ${event.id}, already a member`);
      view.add(event.id);
    } else {
      if (!view.has(event.id)) violations.push(`phantom: removed ${event.id}, not a member`);
      view.delete(event.id);
      if (stoppedGracefully.has(event.id) && event.reason !== 'deleted') violations.push(`${event.id} stopped gracefully but was removed as ${event.reason}`);
    }
  }
  for (const id of stoppedGracefully) if (view.has(id)) violations.push(`ghost: ${id} stopped but is still a member`);
  const same = (a: ReadonlySet<string>, b: ReadonlySet<string>) => a.size === b.size && [...a].every((x) => b.has(x));
  if (!same(view, input.viewAtEnd)) violations.push(`lost event: the stream's view [${[...view].sort()}] is not members() [${[...input.viewAtEnd].sort()}]`);
  if (!same(running, input.viewAtEnd)) violations.push(`members() [${[...input.viewAtEnd].sort()}] are not the running processes [${[...running].sort()}]`);
  return violations;
}
