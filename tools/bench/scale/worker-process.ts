import { fileURLToPath } from 'node:url';
import { ChildHandle } from '@rollcall/child-harness';
import type { Request, WorkerEvent } from './protocol.js';

const ENTRY = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** A worker OS process (worker.ts) on the child-process harness; every request to it is bounded. */
export type WorkerProcess = ChildHandle<Request, WorkerEvent>;

/** Starts a worker for `backend` (TypeScript through tsx, as the benchmark itself runs) and waits until it has loaded the backend and listens. */
export async function startWorker(label: string, backend: string, onEvent: (event: WorkerEvent) => void, timeoutMs: number): Promise<WorkerProcess> {
  // A worker reports nothing before it is asked to open its processes: subscribing once it is ready misses nothing.
  const child = await ChildHandle.start<Request, WorkerEvent>({ entry: ENTRY, args: [backend], execArgv: ['--import', 'tsx', '--expose-gc'], label }, timeoutMs);
  child.onEvent(onEvent);
  return child;
}
