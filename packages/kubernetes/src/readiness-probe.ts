import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidArgumentError, systemClock, type Clock, type ConnectionState, type Registry } from '@rollcall/core';
import { announcedAlive, registryStore } from '@rollcall/core/admin';
import { EndpointReadiness } from './endpoint-readiness.js';

/** What {@link serveReadinessProbe} takes. */
export interface ReadinessProbeOptions {
  /** TCP port of the probe; 0 picks a free one (tests). Default 8086. */
  port?: number;
  /** Address to listen on. Default `0.0.0.0` (the kubelet probes the pod IP). */
  host?: string;
  /** Path the probe answers on; any other is 404. Default `/readyz`. */
  path?: string;
  /**
   * How long the connection may stay `lost` before the probe fails. The API
   * server being away is not this process dying: a restart shorter than the
   * member lease plus this removes no member. Milliseconds. Default 60000.
   */
  lostGraceMs?: number;
  /** Your own condition, ANDed in (e.g. the application finished warming up). Default: always true. */
  healthy?: () => boolean;
  /** What `lostGraceMs` is measured on (its monotonic `now()`), and the answers reported to the registry's pod members: the registry's own clock. Default the system clock. */
  clock?: Clock;
  /**
   * The pod template's `readinessProbe` numbers. Given, each pod member
   * (`registry.member.liveness=pod`) of this registry is bounded by the probe's
   * answers: with no Ready answer for `failureThreshold × periodSeconds +
   * timeoutSeconds` (less a tenth for clock-rate drift) the kubelet may have
   * marked the pod not Ready and peers removed its members, so each is lost
   * (`probe-missed`) by then — a paused or hung process stops before anyone may
   * act on its removal. The price: a kubelet that probes late loses them too.
   * The probe then also answers 503 while a member this registry announced is
   * not alive (past its bound, or lost and not yet announced again), so the
   * kubelet's probe in flight when a paused process resumes does not make its
   * lost incarnation Ready again for its peers.
   * Seconds; each field defaults to 1 (the stanza below). Default: not given,
   * no bound (the probe's answers bound nothing).
   */
  kubeletProbe?: { periodSeconds?: number; failureThreshold?: number; timeoutSeconds?: number };
}

/** A running probe. */
export interface ReadinessProbe {
  /** The port it listens on. */
  readonly port: number;
  /** Whether it answers 200 now. */
  ready(): boolean;
  close(): Promise<void>;
}

/** From a Ready answer, the earliest the kubelet may mark the pod not Ready: its failureThreshold consecutive failures, the last one after its timeout, less a tenth. Milliseconds. */
function probeWindowMs({ periodSeconds = 1, failureThreshold = 1, timeoutSeconds = 1 }: NonNullable<ReadinessProbeOptions['kubeletProbe']>): number {
  for (const [name, value] of Object.entries({ periodSeconds, failureThreshold, timeoutSeconds })) {
    if (!Number.isInteger(value) || value < 1 || value > 3600) throw new InvalidArgumentError(`serveReadinessProbe kubeletProbe.${name} ${value} is not valid: a whole number of seconds from 1 to 3600`);
  }
  return Math.floor((failureThreshold * periodSeconds + timeoutSeconds) * 1000 * 0.9);
}

/**
 * The readiness probe of a pod whose members use `registry.member.liveness=pod`:
 * an HTTP endpoint that answers 200 while the registry can serve — open, and
 * `connected`, `suspended` (a call failed; the backend may be restarting), or
 * `lost` for less than `lostGraceMs` — and 503 otherwise (closing or closed,
 * lost for longer, or `healthy()` false). A process that hangs stops answering,
 * so the kubelet marks its pod not Ready and readers remove its members, as a
 * missed heartbeat would; with `kubeletProbe`, each Ready answer bounds this
 * registry's pod members, so a process paused past the kubelet's patience is
 * lost (`probe-missed`) before its peers may remove it. The pod template's stanza:
 *
 * ```yaml
 * readinessProbe:
 *   httpGet: { path: /readyz, port: 8086 }
 *   periodSeconds: 1
 *   failureThreshold: 1
 * ```
 */
export async function serveReadinessProbe(registry: Registry, options: ReadinessProbeOptions = {}): Promise<ReadinessProbe> {
  const path = options.path ?? '/readyz';
  const lostGraceMs = options.lostGraceMs ?? 60_000;
  const clock = options.clock ?? systemClock;
  let lostSince: number | undefined = registry.state === 'lost' ? clock.now() : undefined;
  const track = (state: ConnectionState) => (lostSince = state === 'lost' ? (lostSince ?? clock.now()) : undefined);
  const offs = (['connected', 'suspended', 'lost', 'reconnected'] as const).map((type) => registry.on(type, (e: { state: ConnectionState }) => track(e.state)));
  const notReadyAfterMs = options.kubeletProbe ? probeWindowMs(options.kubeletProbe) : undefined;
  // Bound members: asked before an answer is given (and so before it vouches for anyone), never after.
  const membersAlive = () => notReadyAfterMs === undefined || announcedAlive(registry);
  const ready = () => registry.isOpen && (lostSince === undefined || clock.now() - lostSince < lostGraceMs) && membersAlive() && (options.healthy?.() ?? true);
  const podReadiness = notReadyAfterMs === undefined ? undefined : (registryStore(registry) as { podReadiness?: unknown }).podReadiness;
  const answered = podReadiness instanceof EndpointReadiness ? (at: number) => podReadiness.selfProbeAnswered({ at, notReadyAfterMs: notReadyAfterMs! }) : () => {};
  const server: Server = createServer((req, res) => {
    if ((req.url ?? '').split('?')[0] !== path) {
      res.writeHead(404).end();
      return;
    }
    const ok = ready();
    if (ok) answered(clock.now());
    res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? `ok ${registry.state}\n` : `not ready ${registry.isOpen ? registry.state : 'closed'}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8086, options.host ?? '0.0.0.0', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    ready,
    close: () => {
      offs.forEach((off) => off());
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
