import type { Logger } from './logger.js';

type Listener<T> = (event: T) => void;

/**
 * A small typed event emitter. A listener that throws is logged and does not
 * disturb the algorithm that emitted, nor the other listeners.
 */
export class Emitter<Events extends { [K in keyof Events]: unknown }> {
  private readonly listeners = new Map<keyof Events, Set<Listener<never>>>();

  constructor(protected readonly emitterLogger: Logger) {}

  /** Subscribes `listener` to `type`; returns the unsubscribe function. */
  on<K extends keyof Events>(type: K, listener: Listener<Events[K]>): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener as Listener<never>);
    return () => this.off(type, listener);
  }

  /** Like `on`, but the listener runs at most once. */
  once<K extends keyof Events>(type: K, listener: Listener<Events[K]>): () => void {
    const off = this.on(type, (event) => {
      off();
      listener(event);
    });
    return off;
  }

  off<K extends keyof Events>(type: K, listener: Listener<Events[K]>): void {
    this.listeners.get(type)?.delete(listener as Listener<never>);
  }

  emit<K extends keyof Events>(type: K, event: Events[K]): void {
    for (const listener of [...(this.listeners.get(type) ?? [])]) {
      try {
        (listener as Listener<Events[K]>)(event);
      } catch (err) {
        this.emitterLogger.error({ err, event: String(type) }, '[rollcall] an event listener threw');
      }
    }
  }
}
