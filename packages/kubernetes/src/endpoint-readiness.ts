import { ConfigurationError, type Logger, type RegistryError, type Timer } from '@rollcall/core';
import { Backoff, type PodReadinessSource, type PodReadinessWatch, type SelfProbeAnswer } from '@rollcall/core/spi';
import { BACKEND, ResourceInformer, type ApiClient, type ObjectMeta } from '@rollcall/kube-client';

/** The slice of a `discovery.k8s.io/v1` EndpointSlice read here. */
interface EndpointSlice {
  metadata: ObjectMeta;
  endpoints?: { conditions?: { ready?: boolean | null; serving?: boolean | null }; targetRef?: { kind?: string; uid?: string } }[] | null;
}

/** The label the endpoints controller puts on every slice of a Service. */
const SERVICE_LABEL = 'kubernetes.io/service-name';
/** A Service name: a DNS-1035 label. */
const SERVICE_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A role's informer and who follows it. */
interface SharedFollow {
  /** The slices as last reported; undefined until the first list. */
  slices: EndpointSlice[] | undefined;
  /** Why the first list failed, while no list has succeeded (the informer keeps trying). */
  failed: unknown;
  subscribers: Set<(slices: EndpointSlice[]) => void>;
  watch: PodReadinessWatch;
}

export interface EndpointReadinessConfig {
  client: ApiClient;
  logger: Logger;
  namespace: string;
  /** The Service of a role: `{role}` is replaced by the role, lowercased, `.` and `_` as `-`. */
  serviceTemplate: string;
  /** This process's pod uid (the downward API's `metadata.uid`); undefined outside a pod. */
  podUid: string | undefined;
  /** How long announce waits for this pod to show in its role's Service. Milliseconds. */
  servedTimeoutMs: number;
  watchSilenceTimeoutMs: number;
  watchTimeoutSeconds: number;
}

/**
 * Pod readiness for `registry.member.liveness=pod`, from the EndpointSlices of
 * one Service per role: the endpoints controller lists every pod the Service
 * selects with its `ready` condition, which is the pod's Ready condition (and
 * false once it terminates), and names the pod by uid in `targetRef`. Readers
 * need get/list/watch on `endpointslices` only — never on pods, whose specs and
 * environment a pod watch would show them. One watch per role, shared by the
 * announces and the readers of the role in this process.
 */
export class EndpointReadiness implements PodReadinessSource {
  /** The one informer per role, shared by every subscriber. */
  private readonly followers = new Map<string, SharedFollow>();
  /** Who hears this process's own probe answers (pod members bound by them). */
  private readonly probeListeners = new Set<(answer: SelfProbeAnswer) => void>();

  constructor(private readonly config: EndpointReadinessConfig) {}

  onSelfProbe(listener: (answer: SelfProbeAnswer) => void): () => void {
    this.probeListeners.add(listener);
    return () => this.probeListeners.delete(listener);
  }

  /** This process's readiness probe served a Ready answer (serveReadinessProbe). */
  selfProbeAnswered(answer: SelfProbeAnswer): void {
    for (const listener of this.probeListeners) listener(answer);
  }

  get podUid(): string | undefined {
    return this.config.podUid;
  }

  /** The Service of `role`; INVALID_CONFIG when the template makes no valid Service name of it. */
  serviceName(role: string): string {
    const name = this.config.serviceTemplate.replaceAll('{role}', role.toLowerCase().replace(/[._]/g, '-'));
    if (!SERVICE_NAME.test(name)) {
      throw new ConfigurationError(`registry.kubernetes.memberService ${JSON.stringify(this.config.serviceTemplate)} makes ${JSON.stringify(name)} of role ${role}: not a Service name (a DNS-1035 label: 1-63 of a-z 0-9 -, starting with a letter)`, { key: 'registry.kubernetes.memberService', backend: BACKEND });
    }
    return name;
  }

  async assertServed(role: string): Promise<void> {
    const service = this.serviceName(role);
    const uid = this.config.podUid;
    if (uid === undefined) return;
    let seen = false;
    let resolve!: () => void;
    const found = new Promise<void>((r) => (resolve = r));
    const watch = this.subscribe(role, service, (slices) => {
      if (servedPods(slices).has(uid)) {
        seen = true;
        resolve();
      }
    });
    let timer: Timer | undefined;
    try {
      await watch.listed;
      await Promise.race([found, new Promise<void>((r) => (timer = this.config.client.clock.setTimeout(r, this.config.servedTimeoutMs)))]);
    } finally {
      timer?.cancel();
      watch.close();
    }
    if (!seen) {
      throw new ConfigurationError(
        `registry.member.liveness=pod: this pod (uid ${uid}) is not behind Service ${service} in namespace ${this.config.namespace} after ${this.config.servedTimeoutMs} ms: ` +
          `create Service ${service} (clusterIP: None) whose selector matches a label of this pod's template, or set registry.kubernetes.memberService`,
        { key: 'registry.kubernetes.memberService', backend: BACKEND },
      );
    }
  }

  watchRole(role: string, changed: (ready: ReadonlySet<string>) => void): PodReadinessWatch {
    let service: string;
    try {
      service = this.serviceName(role);
    } catch (err) {
      const listed = Promise.reject(err as RegistryError);
      return { listed, close: () => {} };
    }
    return this.subscribe(role, service, (slices) => changed(readyPods(slices)));
  }

  /**
   * `report` gets `role`'s slices after the first list and after each change,
   * through the role's one informer: started by the first subscriber, shared
   * by announce (assertServed) and readers (watchRole), closed with the last.
   * A subscriber that comes after the first list gets the current slices at once.
   */
  private subscribe(role: string, service: string, report: (slices: EndpointSlice[]) => void): PodReadinessWatch {
    let shared = this.followers.get(role);
    if (!shared) {
      const created: SharedFollow = { slices: undefined, failed: undefined, subscribers: new Set(), watch: undefined! };
      created.watch = this.follow(role, service, (slices) => {
        created.slices = slices;
        created.failed = undefined;
        for (const subscriber of [...created.subscribers]) subscriber(slices);
      });
      created.watch.listed.catch((err: unknown) => (created.failed = err));
      this.followers.set(role, (shared = created));
    }
    const follow = shared;
    let open = true;
    let reported = false;
    const subscriber = (slices: EndpointSlice[]) => {
      reported = true;
      report(slices);
    };
    follow.subscribers.add(subscriber);
    const listed: Promise<void> =
      follow.slices !== undefined
        ? Promise.resolve().then(() => {
            if (open && !reported) subscriber(follow.slices!);
          })
        : follow.failed !== undefined
          ? Promise.reject(follow.failed)
          : follow.watch.listed;
    listed.catch(() => {});
    return {
      listed,
      close: () => {
        if (!open) return;
        open = false;
        follow.subscribers.delete(subscriber);
        if (follow.subscribers.size === 0 && this.followers.get(role) === follow) {
          this.followers.delete(role);
          follow.watch.close();
        }
      },
    };
  }

  /** One informer on `service`'s slices; `report` gets them all after the first list and after each change (one report per burst). */
  private follow(role: string, service: string, report: (slices: EndpointSlice[]) => void): PodReadinessWatch {
    const { client, logger, namespace } = this.config;
    let closed = false;
    let pending = false;
    // A relist applies its objects one by one: report once they are all in, so no pod looks gone half-way.
    const schedule = () => {
      if (pending || closed) return;
      pending = true;
      queueMicrotask(() => {
        pending = false;
        if (!closed) report(informer.list());
      });
    };
    const informer = new ResourceInformer<EndpointSlice & { metadata: ObjectMeta & { resourceVersion?: string } }>(
      {
        client,
        logger,
        path: `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`,
        labelSelector: `${SERVICE_LABEL}=${service}`,
        resource: 'endpointslices.discovery.k8s.io',
        namespace,
        silenceTimeoutMs: this.config.watchSilenceTimeoutMs,
        timeoutSeconds: this.config.watchTimeoutSeconds,
      },
      { upsert: schedule, delete: schedule },
    );
    let timer: Timer | undefined;
    const backoff = new Backoff({ clock: client.clock, initialMs: 500, maxMs: 30_000 });
    // The informer resumes a broken watch itself; a first list that failed is tried again here.
    const start = (): Promise<void> =>
      informer.start().then(
        () => report(informer.list()),
        (err: unknown) => {
          if (!closed) {
            logger.debug({ err, role, service }, '[rollcall] [kubernetes] cannot list the role Service\'s endpointslices; trying again');
            timer = backoff.schedule(() => void start().catch(() => {}));
          }
          throw err;
        },
      );
    const listed = start();
    listed.catch(() => {});
    return {
      listed,
      close: () => {
        closed = true;
        timer?.cancel();
        informer.close();
      },
    };
  }
}

function endpointsOf(slice: EndpointSlice) {
  return slice.endpoints ?? [];
}

/** The uids of every pod behind a Service, Ready or not: what announce waits for. */
export function servedPods(slices: EndpointSlice[]): Set<string> {
  const served = new Set<string>();
  for (const slice of slices) for (const e of endpointsOf(slice)) if (e.targetRef?.uid) served.add(e.targetRef.uid);
  return served;
}

/**
 * The uids of the Ready pods behind a Service. An endpoint is its pod's
 * readiness: `serving` where the controller reports it (Ready, terminating or
 * not: a terminating member is alive until it withdraws), else `ready`. A pod
 * in several slices (while the controller moves it) is Ready if any says so.
 */
export function readyPods(slices: EndpointSlice[]): Set<string> {
  const ready = new Set<string>();
  for (const slice of slices) {
    for (const e of endpointsOf(slice)) {
      const uid = e.targetRef?.kind === 'Pod' ? e.targetRef.uid : undefined;
      if (uid && (e.conditions?.serving ?? e.conditions?.ready ?? true)) ready.add(uid);
    }
  }
  return ready;
}
