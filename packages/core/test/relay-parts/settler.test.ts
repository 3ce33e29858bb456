import { describe, expect, test, vi } from 'vitest'
import type { Settlement } from '../../src/protocol/backend.js'
import type { Outcome } from '../../src/relay/outcome.js'
import { Settler } from '../../src/relay/settler.js'
import { useFakeTimersPerTest } from './support/parts.js'

const outcome = (id: string): Outcome =>
  ({
    entry: {} as never,
    settlement: { id, attempts: 1, outcome: 'delivered' },
    message: undefined,
  }) as Outcome

function harness() {
  const writes: string[][] = []
  const written: { ids: string[]; applied: string[] | undefined }[] = []
  const failures: { failures: number; retryInMs: number; outcomes: number }[] = []
  let answer: (s: Settlement[]) => Promise<readonly string[]> = async (s) => s.map((x) => x.id)
  const settler = new Settler({
    write: (settlements) => {
      writes.push(settlements.map((s) => s.id))
      return answer(settlements)
    },
    onWritten: (batch, applied) =>
      written.push({ ids: batch.map((o) => o.settlement.id), applied: applied && [...applied] }),
    onFailed: (_e, n, retryInMs, outcomes) => failures.push({ failures: n, retryInMs, outcomes }),
  })
  const setAnswer = (f: typeof answer) => (answer = f)
  /** Every statement from now on fails with `down`. */
  const failWrites = () =>
    setAnswer(async () => {
      throw new Error('down')
    })
  return { settler, writes, written, failures, setAnswer, failWrites }
}

useFakeTimersPerTest()

describe('Settler', () => {
  test('outcomes queued in one turn go into one statement; one statement at a time', async () => {
    const h = harness()
    let release!: () => void
    h.setAnswer((s) => new Promise((r) => (release = () => r(s.map((x) => x.id)))))
    h.settler.enqueue(outcome('a'))
    h.settler.enqueue(outcome('b'))
    await vi.advanceTimersByTimeAsync(0)
    h.settler.enqueue(outcome('c'))
    await vi.advanceTimersByTimeAsync(0)
    expect(h.writes).toEqual([['a', 'b']])
    h.setAnswer(async (s) => s.map((x) => x.id))
    release()
    await vi.advanceTimersByTimeAsync(0)
    expect(h.writes).toEqual([['a', 'b'], ['c']])
    expect(h.written.map((w) => w.applied)).toEqual([undefined, undefined])
    expect(h.settler.busy).toBe(false)
  })

  test('a fenced-out outcome is reported as not applied', async () => {
    const h = harness()
    h.setAnswer(async () => ['a'])
    h.settler.enqueue(outcome('a'))
    h.settler.enqueue(outcome('b'))
    await vi.advanceTimersByTimeAsync(0)
    expect(h.written).toEqual([{ ids: ['a', 'b'], applied: ['a'] }])
  })

  test('a failed statement keeps its outcomes and retries with backoff, with what was queued meanwhile', async () => {
    const h = harness()
    h.failWrites()
    h.settler.enqueue(outcome('a'))
    await vi.advanceTimersByTimeAsync(0)
    expect(h.failures).toEqual([{ failures: 1, retryInMs: 100, outcomes: 1 }])
    h.settler.enqueue(outcome('b'))
    await vi.advanceTimersByTimeAsync(0)
    expect(h.writes).toEqual([['a']])
    await vi.advanceTimersByTimeAsync(100)
    expect(h.failures.at(-1)).toEqual({ failures: 2, retryInMs: 200, outcomes: 2 })
    h.setAnswer(async (s) => s.map((x) => x.id))
    await vi.advanceTimersByTimeAsync(200)
    expect(h.written).toEqual([{ ids: ['a', 'b'], applied: undefined }])
  })

  test('retryNow writes at once what waits for a retry; cancelRetry drops the retry', async () => {
    const h = harness()
    h.failWrites()
    h.settler.enqueue(outcome('a'))
    await vi.advanceTimersByTimeAsync(0)
    h.setAnswer(async (s) => s.map((x) => x.id))
    h.settler.retryNow()
    await vi.advanceTimersByTimeAsync(0)
    expect(h.written).toHaveLength(1)
    h.failWrites()
    h.settler.enqueue(outcome('b'))
    await vi.advanceTimersByTimeAsync(0)
    h.settler.cancelRetry()
    expect(vi.getTimerCount()).toBe(0)
  })
})
