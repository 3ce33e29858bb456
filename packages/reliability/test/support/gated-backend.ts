import type { OutboxBackend } from '@outboxkit/core'
import type { Settlement } from '@outboxkit/core/adapter'

/** A backend whose settles can be held back, to make a relay late on purpose. */
export interface GatedBackend {
  readonly backend: OutboxBackend
  /** Every settlement passed on, with the ids the database applied. */
  readonly settles: { settlements: Settlement[]; applied: string[] }[]
  /** Holds every settle from now on until {@link GatedBackend.release}. */
  hold(): void
  /** Lets held (and future) settles through. */
  release(): void
  /** Resolves when a settle is being held. */
  readonly held: Promise<void>
}

/** Wraps `inner` so its settles can be held back (see {@link GatedBackend}). */
export function gatedBackend(inner: OutboxBackend): GatedBackend {
  let holding = false
  let release: () => void = () => {}
  let gate = Promise.resolve()
  let onHeld!: () => void
  const held = new Promise<void>((r) => {
    onHeld = r
  })
  const settles: GatedBackend['settles'] = []
  const backend: OutboxBackend = {
    ...inner,
    async settle(request) {
      if (holding) {
        onHeld()
        await gate
      }
      const applied = await inner.settle(request)
      settles.push({ settlements: [...request.settlements], applied })
      return applied
    },
  }
  return {
    backend,
    settles,
    held,
    hold() {
      holding = true
      gate = new Promise<void>((r) => {
        release = r
      })
    },
    release() {
      holding = false
      release()
    },
  }
}
