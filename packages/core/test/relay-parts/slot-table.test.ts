import { describe, expect, test } from 'vitest'
import { SlotTable } from '../../src/relay/in-flight.js'
import { claimedRow } from './support/parts.js'

const row = claimedRow

describe('SlotTable', () => {
  test('a slot is held from take to release; release counts once', () => {
    const slots = new SlotTable(3, 0)
    const a = slots.take(row('a'), 0)
    slots.take(row('b'), 0)
    expect([slots.held, slots.free()]).toEqual([2, 1])
    expect(slots.release(a)).toBe(true)
    expect(slots.release(a)).toBe(false)
    expect([slots.held, slots.free(), a.phase]).toEqual([1, 2, 'done'])
  })

  test('without maxPendingOutcomes a settling outcome still holds its slot', () => {
    const slots = new SlotTable(2, 0)
    const a = slots.take(row('a'), 0)
    slots.take(row('b'), 0)
    expect(slots.toSettling(a)).toBe(true)
    expect(slots.free()).toBe(0)
    expect(slots.running().map((e) => e.row.id)).toEqual(['b'])
  })

  test('with maxPendingOutcomes a settling outcome frees a handler slot, bounded by N waiting outcomes', () => {
    const slots = new SlotTable(2, 1)
    const a = slots.take(row('a'), 0)
    const b = slots.take(row('b'), 0)
    expect(slots.free()).toBe(0)
    slots.toSettling(a)
    expect(slots.free()).toBe(1)
    slots.toSettling(b)
    // Two outcomes wait, one may: concurrency 2 + 1 pending - 2 held = 1.
    expect(slots.free()).toBe(1)
  })

  test('toSettling refuses a message that is no longer running (abandoned, or settling already)', () => {
    const slots = new SlotTable(2, 0)
    const a = slots.take(row('a'), 0)
    slots.release(a)
    expect(slots.toSettling(a)).toBe(false)
    const b = slots.take(row('b'), 0)
    slots.toSettling(b)
    expect(slots.toSettling(b)).toBe(false)
  })

  test('whenIdle resolves at once when empty, else when the last slot is released', async () => {
    const slots = new SlotTable(2, 0)
    await slots.whenIdle()
    const a = slots.take(row('a'), 0)
    const b = slots.take(row('b'), 0)
    let idle = false
    const waiting = slots.whenIdle().then(() => {
      idle = true
    })
    slots.release(a)
    await Promise.resolve()
    expect(idle).toBe(false)
    slots.release(b)
    await waiting
    expect(idle).toBe(true)
  })
})
