import { expect } from 'vitest'
import type { Verdict } from '../../src/verdict.js'

/**
 * The verdict's hard zeros: no committed message lost, no rolled-back one delivered (phantom), no
 * side effect of an unknown message, and no attempt run twice.
 */
export function expectNothingLostOrPhantom(v: Verdict): void {
  expect(v.lost).toBe(0)
  expect(v.phantom).toBe(0)
  expect(v.unknown).toBe(0)
  expect(v.sameAttempt).toBe(0)
}
