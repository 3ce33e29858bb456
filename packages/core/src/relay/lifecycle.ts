import { OutboxError } from '../outbox/errors.js'

/**
 * The state of a relay: `created` (never started), `running`, `stopping` (draining, then releasing
 * the backend) and `stopped`. A stopped relay may start again.
 */
export type RelayState = 'created' | 'running' | 'stopping' | 'stopped'

/** The relay's state, changed only through these guarded transitions. */
export class RelayLifecycle {
  #state: RelayState = 'created'
  #stopping: Promise<void> | undefined

  /** The current state. */
  get state(): RelayState {
    return this.#state
  }

  /** Whether the relay is running (claims and delivers). */
  get running(): boolean {
    return this.#state === 'running'
  }

  /** The stop in progress, if any: a start waits for it, a second stop returns it. */
  get stopping(): Promise<void> | undefined {
    return this.#stopping
  }

  /** `created | stopped -> running`. False when it was running already. */
  toRunning(): boolean {
    if (this.#state === 'running') return false
    if (this.#state === 'stopping') {
      throw new OutboxError('RELAY_STATE', 'the relay cannot start while it stops: await stop() first.', {
        source: 'relay',
      })
    }
    this.#state = 'running'
    return true
  }

  /** `any -> stopping` while `drain` runs, then `stopped`. Returns the one stop promise. */
  toStopping(drain: () => Promise<void>): Promise<void> {
    if (this.#stopping) return this.#stopping
    this.#state = 'stopping'
    this.#stopping = drain().finally(() => {
      this.#state = 'stopped'
      this.#stopping = undefined
    })
    return this.#stopping
  }
}
