import { monotonicMs } from '@rollcall/tools/testenv/monotonic';
import { JsonServer, type JsonAnswer } from './fenced-resource.js';
import type { FenceRequest, WorkRequest } from './failover-protocol.js';

/** One worker write as the resource decided it. */
export interface WorkWrite extends WorkRequest {
  decidedAt: number;
  accepted: boolean;
}

/** One leader fence as the resource decided it. */
export interface FenceWrite extends FenceRequest {
  decidedAt: number;
  accepted: boolean;
}

/**
 * The work items of the failover chaos, in a store that checks incarnations,
 * as a scheduler's task table does once its rows record who runs them: a worker
 * writes progress on its item under its member incarnation, refused once that
 * incarnation has been fenced; a leader's failover fences an incarnation (and
 * frees the items it held) under its fencing token, refused below the highest
 * token accepted. Every decision is kept for the verdict.
 */
export class IncarnationResource {
  readonly work: WorkWrite[] = [];
  readonly fences: FenceWrite[] = [];
  /** Each item's holder: the member incarnation that last wrote it. */
  readonly holders = new Map<string, string>();
  private readonly fenced = new Set<string>();
  private highest = 0;
  private server!: JsonServer;

  private constructor() {}

  static async start(): Promise<IncarnationResource> {
    const resource = new IncarnationResource();
    resource.server = await JsonServer.start((path, body) => (path === '/fence' ? resource.fence(body as FenceRequest) : resource.write(body as WorkRequest)));
    return resource;
  }

  get url(): string {
    return this.server.url;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private write(request: WorkRequest): JsonAnswer {
    const accepted = !this.fenced.has(request.incarnation);
    if (accepted) this.holders.set(request.item, request.incarnation);
    this.work.push({ ...request, decidedAt: monotonicMs(), accepted });
    return { status: accepted ? 200 : 409, body: {} };
  }

  private fence(request: FenceRequest): JsonAnswer {
    const accepted = request.token >= this.highest;
    if (accepted) {
      this.highest = request.token;
      this.fenced.add(request.incarnation);
      for (const [item, holder] of this.holders) if (holder === request.incarnation) this.holders.delete(item);
    }
    this.fences.push({ ...request, decidedAt: monotonicMs(), accepted });
    return { status: accepted ? 200 : 409, body: { highest: this.highest } };
  }
}
