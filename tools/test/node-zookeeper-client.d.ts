// node-zookeeper-client ships no types; only what the smoke test uses.
declare module 'node-zookeeper-client' {
  import type { EventEmitter } from 'node:events';
  export const CreateMode: { PERSISTENT: number; EPHEMERAL: number };
  export interface Client extends EventEmitter {
    connect(): void;
    close(): void;
    create(path: string, data: Buffer, mode: number, cb: (error: Error | null, path: string) => void): void;
    getData(path: string, cb: (error: Error | null, data: Buffer) => void): void;
  }
  export function createClient(connectString: string, options?: { sessionTimeout?: number; spinDelay?: number; retries?: number }): Client;
  const zookeeper: { createClient: typeof createClient; CreateMode: typeof CreateMode };
  export default zookeeper;
}
