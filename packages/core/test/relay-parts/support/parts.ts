import { afterEach, beforeEach, vi } from 'vitest'
import type { ClaimedRow } from '../../../src/protocol/backend.js'

/** A claimed row of topic `t`, attempt 1, in the state `processing`, with id `id`. */
export function claimedRow(id: string): ClaimedRow {
  return {
    id,
    topic: 't',
    key: null,
    payload: '{}',
    headers: '{}',
    attempts: 1,
    createdAtMs: 0,
    state: 'processing',
  }
}

/** Every test of the file on vitest's fake timers, real ones again after it. */
export function useFakeTimersPerTest(): void {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })
}
