/** A listener of a {@link TypedEmitter} event. */
export type Listener<T> = (event: T) => void

/**
 * A minimal typed event emitter. A listener that throws does not break the relay: the error is
 * reported to `onListenerError` and the other listeners still run.
 */
export class TypedEmitter<Events extends { [K in keyof Events]: unknown }> {
  readonly #listeners = new Map<keyof Events, Set<Listener<never>>>()
  readonly #onListenerError: (error: unknown) => void

  /** @param onListenerError - called when a listener throws */
  constructor(onListenerError: (error: unknown) => void = () => {}) {
    this.#onListenerError = onListenerError
  }

  /** Subscribes to `event`; returns a function that unsubscribes. */
  on<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    let set = this.#listeners.get(event)
    if (!set) {
      set = new Set()
      this.#listeners.set(event, set)
    }
    set.add(listener as Listener<never>)
    return () => this.off(event, listener)
  }

  /** Subscribes for one event only; returns a function that unsubscribes. */
  once<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    const off = this.on(event, (e) => {
      off()
      listener(e)
    })
    return off
  }

  /** Unsubscribes `listener` from `event`. */
  off<K extends keyof Events>(event: K, listener: Listener<Events[K]>): void {
    this.#listeners.get(event)?.delete(listener as Listener<never>)
  }

  /** True when `event` has at least one listener (lets callers skip building the event). */
  has(event: keyof Events): boolean {
    return (this.#listeners.get(event)?.size ?? 0) > 0
  }

  /** Calls every listener of `event` with `payload`. */
  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const set = this.#listeners.get(event)
    if (!set) return
    for (const listener of [...set]) {
      try {
        ;(listener as Listener<Events[K]>)(payload)
      } catch (err) {
        if (event !== 'error') this.#onListenerError(err)
      }
    }
  }
}
