import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import { buildClientGoElector, ClientGoCandidate, testenvRoot, type ClientGoCandidateOptions } from '../testenv/index.js';
import type { KubernetesTarget } from './backends/kubernetes.js';
import { IDLE_ROLES, type IdleRequests } from './results.js';
import { perMinute } from './scenarios/idle-requests.js';
import { summarize, type Summary } from '../testenv/measure/stats.js';
import type { IdleProbe } from './target.js';
import { BENCH_TIMING_GO, dephase, WAIT_BOUND_MS } from './timing.js';

/**
 * client-go's own `leaderelection` (the Go program in
 * packages/kubernetes/interop/client-go-elector), measured the way the
 * Rollcall rows are, on the same API server in the same run: the reference
 * implementation's figures next to ours. It has no membership and no lock API.
 */
export class ClientGoReference {
  private readonly running = new Set<ClientGoCandidate>();

  /** client-go's own log lines (klog), out of the way of the table. */
  readonly logFile = join(testenvRoot(), 'logs', 'bench-client-go.log');

  private constructor(
    private readonly k8s: KubernetesTarget,
    private readonly binary: string,
  ) {}

  static async start(k8s: KubernetesTarget): Promise<ClientGoReference> {
    return new ClientGoReference(k8s, await buildClientGoElector());
  }

  private candidate(options: Omit<ClientGoCandidateOptions, 'namespace' | 'logFile'>): ClientGoCandidate {
    const candidate = new ClientGoCandidate(this.binary, { ...options, namespace: this.k8s.namespace, logFile: this.logFile });
    this.running.add(candidate);
    void candidate.exited().then(() => this.running.delete(candidate));
    return candidate;
  }

  /**
   * Each round a new follower process starts and has seen the leader (client-go's
   * OnNewLeader), then the leader gets SIGTERM (a graceful stop: ReleaseOnCancel
   * empties the Lease) or SIGKILL (a crash). Measured from the signal to the
   * follower's OnStartedLeading, by this host's wall clock.
   */
  private async takeovers(rounds: number, signal: 'SIGTERM' | 'SIGKILL'): Promise<Summary> {
    const lease = `bench-client-go-${randomBytes(3).toString('hex')}`;
    const start = (i: number) => this.candidate({ kubeconfig: this.k8s.adminKubeconfig, lease, identity: `client-go-${i}`, ...BENCH_TIMING_GO });
    let leader = start(0);
    let leaderIdentity = 'client-go-0';
    await leader.event('ELECTED', WAIT_BOUND_MS);
    const samples: number[] = [];
    for (let round = 1; round <= rounds; round++) {
      const identity = `client-go-${round}`;
      const follower = start(round);
      await follower.event('LEADER', WAIT_BOUND_MS, 1, (e) => e.identity === leaderIdentity);
      await dephase();
      const signalledAt = Date.now();
      if (signal === 'SIGTERM') leader.stop();
      else leader.kill();
      const elected = await follower.event('ELECTED', WAIT_BOUND_MS);
      samples.push(elected.at - signalledAt);
      await leader.exited();
      [leader, leaderIdentity] = [follower, identity];
    }
    leader.stop();
    await leader.exited();
    return summarize(samples);
  }

  gracefulHandover(rounds: number): Promise<Summary> {
    return this.takeovers(rounds, 'SIGTERM');
  }

  crashFailover(rounds: number): Promise<Summary> {
    return this.takeovers(rounds, 'SIGKILL');
  }

  /**
   * A leader and a follower with client-go's defaults for kube-controller-manager
   * (lease 15 s, renew deadline 10 s, retry 2 s), each its own service account,
   * counted from the audit log over the same span as the Rollcall roles.
   */
  idleProbe(): IdleProbe {
    return {
      measure: async (windowMs): Promise<IdleRequests> => {
        const spanMs = IDLE_ROLES.length * windowMs;
        const [leaderAccount, followerAccount] = await Promise.all([this.k8s.serviceAccount('bench-client-go-leader'), this.k8s.serviceAccount('bench-client-go-follower')]);
        const lease = `bench-client-go-idle-${randomBytes(3).toString('hex')}`;
        const timing = { leaseDuration: '15s', renewDeadline: '10s', retryPeriod: '2s' };
        const leader = this.candidate({ kubeconfig: leaderAccount.kubeconfig, lease, identity: 'leader', ...timing });
        await leader.event('ELECTED', WAIT_BOUND_MS);
        const follower = this.candidate({ kubeconfig: followerAccount.kubeconfig, lease, identity: 'follower', ...timing });
        await follower.event('LEADER', WAIT_BOUND_MS, 1, (e) => e.identity === 'leader');
        const window = this.k8s.audit.open();
        await delay(spanMs); // the measurement period itself
        const counts = await this.k8s.audit.close(window, [leaderAccount.user, followerAccount.user]);
        this.stopAll();
        const rate = (user: string) => perMinute(counts.get(user)!, spanMs);
        return {
          source: `the API server's audit log, one service account per role; all roles at once over ${spanMs / 1000} s`,
          roles: { registry: { na: 'client-go has no registry' }, member: { na: 'client-go has no membership' }, leader: rate(leaderAccount.user), follower: rate(followerAccount.user) },
        };
      },
    };
  }

  /** Kills every candidate still running. */
  stopAll(): void {
    for (const candidate of this.running) candidate.kill();
  }
}
