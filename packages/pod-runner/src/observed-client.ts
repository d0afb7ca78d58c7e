import { RegistryError } from '@rollcall/core';
import { type ApiRequest, ApiClient, type RequestContext, type StreamHandlers } from '@rollcall/kube-client';
import type { RunnerActivity } from '@rollcall/pod-runner-activity';

/**
 * The runner's API client: every request and every stream it opens (the pod
 * watch and its list, each log stream, each pod and event request) is
 * reported as a `request` activity, at the one place they all pass. Durations
 * are on the client's clock: the system clock, as the runner makes it (the
 * runner's own clock moves task deadlines, not the transport).
 */
export class ObservedApiClient extends ApiClient {
  /** Where requests are reported; set once the runner's reporter exists. */
  report: (activity: RunnerActivity) => void = () => {};

  override async request<T>(req: ApiRequest): Promise<T> {
    const started = this.clock.now();
    try {
      const answer = await super.request<T>(req);
      this.done(req.context, started, undefined);
      return answer;
    } catch (err) {
      this.done(req.context, started, err);
      throw err;
    }
  }

  override async stream(path: string, context: RequestContext, handlers: StreamHandlers, format: 'json' | 'text' = 'json'): Promise<{ abort(): void }> {
    const started = this.clock.now();
    try {
      const stream = await super.stream(path, context, handlers, format);
      this.done(context, started, undefined);
      return stream;
    } catch (err) {
      this.done(context, started, err);
      throw err;
    }
  }

  private done(context: RequestContext, started: number, err: unknown): void {
    const code = err === undefined ? undefined : err instanceof RegistryError ? err.code : 'INTERNAL';
    // the dry run of a template is a create in the audit log too
    const verb = context.verb.replace(/ \(dry run\)$/, '');
    this.report({ type: 'request', verb, resource: context.resource, code, durationMs: this.clock.now() - started });
  }
}
