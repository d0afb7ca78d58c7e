import { hasCode, type Logger } from '@rollcall/core';
import type { ApiClient, RequestContext } from '@rollcall/kube-client';
import { RUNNER_LABEL, TASK_ID_LABEL, type Pod } from './pod.js';
import { stampTerm } from './term-fence.js';

/** The stored pod a conditional write is about: a delete or patch of another incarnation or version answers CONFLICT. */
export interface PodPreconditions {
  uid: string;
  resourceVersion: string;
}

/** Options of a fenced, conditional metadata patch. */
export interface PatchOptions {
  /** Sent as `metadata.resourceVersion`: the patch applies only to that version (else CONFLICT). */
  resourceVersion?: string;
  /** Stamps `rollcall.dev/write-term` with this term: the fencing policy judges the patch by it. */
  term?: number;
}

/**
 * The pod requests of one namespace, as the runner and {@link TaskView} make
 * them: every path, verb and `RequestContext` (what an error names) in one
 * place, so a request is counted, fenced or audited at one seam.
 */
export class PodsApi {
  constructor(
    readonly client: ApiClient,
    readonly namespace: string,
    /** Called before each write (create, patch, delete); throws to hold it back. The runner's is its leader gate's renew-deadline and newest-term check. */
    private readonly fence: (verb: string) => void = () => {},
  ) {}

  /** `/api/v1/namespaces/<ns>/pods`, the collection the watch follows. */
  get path(): string {
    return `/api/v1/namespaces/${this.namespace}/pods`;
  }

  context(verb: string, name?: string): RequestContext {
    return { verb, resource: 'pods', namespace: this.namespace, name };
  }

  /** Creates the pod; with `term`, stamped `rollcall.dev/write-term` (the fencing policy refuses a stale one). */
  create(pod: Pod, term?: number): Promise<Pod> {
    this.fence('create');
    const body = term === undefined ? pod : { ...pod, metadata: { ...pod.metadata, annotations: stampTerm(pod.metadata.annotations, term) } };
    return this.client.request<Pod>({ method: 'POST', path: this.path, body, context: this.context('create', pod.metadata.name) });
  }

  /** A server-side dry run of a create: admission and validation, nothing stored. */
  async dryRunCreate(pod: Pod): Promise<void> {
    await this.client.request({ method: 'POST', path: `${this.path}?dryRun=All`, body: pod, context: this.context('create (dry run)', pod.metadata.name) });
  }

  get(name: string): Promise<Pod> {
    return this.client.request<Pod>({ method: 'GET', path: `${this.path}/${name}`, context: this.context('get', name) });
  }

  /** The pods of a runner, or of one of its tasks. */
  async list(runner: string, taskId?: string): Promise<Pod[]> {
    const selector = `${RUNNER_LABEL}=${runner}${taskId ? `,${TASK_ID_LABEL}=${taskId}` : ''}`;
    const list = await this.client.request<{ items: Pod[] }>({ method: 'GET', path: `${this.path}?${new URLSearchParams({ labelSelector: selector })}`, context: { verb: 'list', resource: 'pods', namespace: this.namespace } });
    return list.items;
  }

  /**
   * A JSON merge patch of the pod's metadata; the pod as stored after it (its
   * new resourceVersion is the delete's precondition). With `resourceVersion`
   * it applies only to that version; with `term` it is stamped, as the
   * release patch is, so a later delete is judged by this term.
   */
  async patchMetadata(name: string, metadata: Record<string, unknown>, options: PatchOptions = {}): Promise<Pod> {
    this.fence('patch');
    const annotations = metadata.annotations as Record<string, string> | undefined;
    const body = {
      metadata: {
        ...metadata,
        ...(options.term === undefined ? {} : { annotations: stampTerm(annotations, options.term) }),
        ...(options.resourceVersion === undefined ? {} : { resourceVersion: options.resourceVersion }),
      },
    };
    return this.client.request<Pod>({ method: 'PATCH', path: `${this.path}/${name}`, body, contentType: 'application/merge-patch+json', context: this.context('patch', name) });
  }

  /**
   * Deletes the pod (its dependants in the background); a pod already gone is
   * no error. With `preconditions` only that incarnation at that version is
   * deleted (else CONFLICT): a delete decided on an older read never lands on
   * a newer pod. Under the fencing policy the stored pod's `write-term` must
   * be this term's, so a pod last stamped earlier is patched first.
   */
  async delete(name: string, graceSeconds: number | undefined, preconditions?: PodPreconditions): Promise<void> {
    this.fence('delete');
    try {
      await this.client.request({
        method: 'DELETE',
        path: `${this.path}/${name}`,
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          propagationPolicy: 'Background',
          ...(graceSeconds === undefined ? {} : { gracePeriodSeconds: graceSeconds }),
          ...(preconditions ? { preconditions: { uid: preconditions.uid, resourceVersion: preconditions.resourceVersion } } : {}),
        },
        context: this.context('delete', name),
      });
    } catch (err) {
      if (!hasCode(err, 'NOT_FOUND')) throw err;
    }
  }

  /** The pod's last five events (oldest first) as `reason: message`; none when they cannot be listed (they only explain a timeout). */
  async recentEvents(podName: string, logger: Logger): Promise<string[]> {
    try {
      const query = new URLSearchParams({ fieldSelector: `involvedObject.name=${podName}` });
      const list = await this.client.request<{ items: { reason?: string; message?: string }[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${this.namespace}/events?${query}`,
        context: { verb: 'list', resource: 'events', namespace: this.namespace },
      });
      return list.items.slice(-5).map((e) => `${e.reason ?? ''}: ${e.message ?? ''}`.trim());
    } catch (err) {
      logger.debug({ err, pod: podName }, '[rollcall] [pod-runner] could not list the pod events of a timed-out task');
      return [];
    }
  }
}
