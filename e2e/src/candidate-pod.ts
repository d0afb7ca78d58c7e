import type { Socket } from 'node:net';
import type { V1Pod } from '@kubernetes/client-node';
import { lineChannel, type MessageChannel } from '@rollcall/child-harness';
import { containerPids, signalContainer } from '@rollcall/tools/testenv';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';
import { type CandidateHandle, type EventSink, type IncarnationRecord, newIncarnation } from './candidate-handle.js';
import type { CandidateCommand, CandidateEvent, CandidateInit, CandidateSpec } from './protocol.js';

/** The container of a candidate's pod that runs it. */
export const CANDIDATE_CONTAINER = 'main';

/**
 * The coordinator's handle on one start of a candidate's container in a pod on
 * the real node. The channel is the child harness's JSON lines over the unix
 * socket the candidate connected back on (a write to a unix socket is taken by
 * the kernel before write() returns, so what it reported before a SIGKILL is
 * here); the signals go to the container's processes, found from its cgroup,
 * as a crash or a freeze inside the pod would hit them. The socket closing is
 * the process's end; its exit code is read from the pod afterwards
 * (`settle`).
 */
export class CandidatePod implements CandidateHandle {
  readonly record: IncarnationRecord;
  private readonly channel: MessageChannel;
  private closed = false;
  private readonly wakers = new Set<() => void>();
  private readonly gone: Promise<void>;

  /** `pod` as read once this start's container ran: its container id names the cgroup to signal. */
  constructor(
    spec: CandidateSpec,
    private readonly socket: Socket,
    private readonly pod: V1Pod,
    logFile: string,
    onEvent: EventSink,
    /** Reads the exit of this start from the pod once it ended. */
    private readonly readExit: (pod: V1Pod) => Promise<IncarnationRecord['exit']>,
  ) {
    this.record = newIncarnation(spec, containerPids(pod, CANDIDATE_CONTAINER)[0] ?? 0, logFile);
    this.channel = lineChannel(socket, socket);
    this.channel.on('message', (raw) => {
      const message = raw as { ch?: string; kind?: string; event?: CandidateEvent };
      if (message.ch !== 'ctl' || message.kind !== 'event' || !message.event) return;
      this.record.events.push(message.event);
      onEvent(this, message.event);
      this.wake();
    });
    socket.on('error', () => {});
    this.gone = new Promise((resolve) =>
      socket.once('close', () => {
        this.closed = true;
        this.record.exitedAt = monotonicMs();
        this.wake();
        resolve();
      }),
    );
  }

  /** Tells the candidate which incarnation it is (the first message it reads). */
  init(init: CandidateInit): void {
    this.channel.send({ ch: 'ctl', kind: 'init', init }, () => {});
  }

  /** Resolves once this start's exit is on its record (the socket closed, the pod read). */
  async settle(): Promise<void> {
    await this.gone;
    this.record.exit ??= this.record.killedAt !== undefined ? { code: null, signal: 'SIGKILL' } : await this.readExit(this.pod);
  }

  /** The container this start ran in (`containerd://…`). */
  get containerId(): string | undefined {
    return this.pod.status?.containerStatuses?.find((c) => c.name === CANDIDATE_CONTAINER)?.containerID;
  }

  get name(): string {
    return this.record.name;
  }

  get alive(): boolean {
    return !this.closed;
  }

  get stopped(): boolean {
    return this.record.pauses.length > 0 && this.record.pauses.at(-1)?.to === undefined;
  }

  send(command: CandidateCommand): void {
    if (this.alive) this.channel.send({ ch: 'ctl', kind: 'command', command }, () => {});
  }

  event<T extends CandidateEvent['type']>(type: T, timeoutMs: number, match: (e: Extract<CandidateEvent, { type: T }>) => boolean = () => true): Promise<Extract<CandidateEvent, { type: T }>> {
    const find = () => this.record.events.find((e): e is Extract<CandidateEvent, { type: T }> => e.type === type && match(e as Extract<CandidateEvent, { type: T }>));
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = find();
        if (!found && this.alive) return;
        clearTimeout(timer);
        this.wakers.delete(check);
        if (found) resolve(found);
        else reject(new Error(`${this.describe()} ended before it reported ${type}`));
      };
      const timer = setTimeout(() => {
        this.wakers.delete(check);
        reject(new Error(`${this.describe()} did not report ${type} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.wakers.add(check);
      check();
    });
  }

  async kill(): Promise<void> {
    if (this.alive) {
      this.record.killedAt = monotonicMs();
      signalContainer(this.pod, CANDIDATE_CONTAINER, 'SIGKILL');
    }
    await this.gone;
  }

  pause(): void {
    if (!this.alive || this.stopped) return;
    this.record.pauses.push({ from: monotonicMs(), to: undefined });
    signalContainer(this.pod, CANDIDATE_CONTAINER, 'SIGSTOP');
  }

  resume(): void {
    const pause = this.record.pauses.at(-1);
    if (!this.alive || !pause || pause.to !== undefined) return;
    signalContainer(this.pod, CANDIDATE_CONTAINER, 'SIGCONT');
    pause.to = monotonicMs();
  }

  async shutdown(timeoutMs: number): Promise<boolean> {
    if (!this.alive) return true;
    this.record.shutdownAt = monotonicMs();
    this.send({ op: 'shutdown' });
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([this.gone.then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)))]);
    clearTimeout(timer);
    if (!inTime) await this.kill();
    await this.settle();
    return inTime;
  }

  describe(): string {
    return `${this.record.name}#${this.record.incarnation} (pod ${this.pod.metadata?.namespace}/${this.pod.metadata?.name}, pid ${this.record.pid})`;
  }

  private wake(): void {
    this.wakers.forEach((wake) => wake());
  }
}
