import { describe, expect, test } from 'vitest'
import { defineOutbox } from '../../src/outbox/define-outbox.js'
import type { ClaimedRow } from '../../src/protocol/backend.js'
import type { OutboxWal, WalMove, WalReadHandlers } from '../../src/protocol/wal.js'
import { MARK_AHEAD, WalSource } from '../../src/relay/wal-source.js'
import { resolveLogger } from '../../src/telemetry/logger.js'

// The slot source's bookkeeping (docs/wal.md, "The relay"), against an in-memory slot: it
// confirms only up to the end of the last transaction whose every message is settled.

const row = (id: string, topic = 't'): ClaimedRow => ({
  id,
  topic,
  key: null,
  payload: '{}',
  headers: '{}',
  attempts: 1,
  createdAtMs: 0,
  state: 'processing',
})

/** Lets queued promise callbacks and immediates run (the in-memory slot answers at once). */
const tick = () => new Promise((r) => setImmediate(r))

async function harness(free = 100, initialMark = 0n, markGate?: Promise<void>) {
  const confirmed: bigint[] = []
  const moved: WalMove[] = []
  /** Every write of the dispatch mark: [lsn, exact]. */
  const markWrites: [bigint, boolean][] = []
  let mark = initialMark
  let handlers!: WalReadHandlers
  const wal: OutboxWal = {
    check: async () => {},
    read: async (_o, h) => {
      handlers = h
      return { confirm: (lsn) => void confirmed.push(lsn), pause() {}, resume() {}, close: async () => {} }
    },
    moveToTable: async (_t, moves) => void moved.push(...moves),
    readDispatchMark: async () => {
      await markGate
      return mark
    },
    writeDispatchMark: async (_o, lsn, exact) => {
      markWrites.push([lsn, exact])
      mark = exact || lsn > mark ? lsn : mark
    },
    slotStats: async () => null,
    dropSlot: async () => true,
  }
  const delivered: ClaimedRow[] = []
  let onDeliver: ((r: ClaimedRow) => void) | undefined
  let slots = free
  const source = new WalSource({
    wal,
    outbox: defineOutbox({ table: 'wal_parts', transport: 'wal' }),
    topics: new Set(['t']),
    log: resolveLogger(undefined),
    slotWarnBytes: 1e12,
    freeSlots: () => slots,
    onRows: (rows) => {
      slots -= rows.length
      for (const r of rows) onDeliver?.(r)
      delivered.push(...rows)
    },
    reportError: () => {},
    replayMove: (r) => ({ row: r, state: 'pending', attempts: 1, delayMs: 1_000, error: 'replayed' }),
  })
  source.start()
  await tick()
  if (!handlers) throw new Error('the source did not read the slot')
  const settle = (...rows: ClaimedRow[]) => {
    slots += rows.length
    source.settled(rows)
  }
  return {
    source,
    handlers: () => handlers,
    confirmed,
    moved,
    markWrites,
    mark: () => mark,
    onDeliver: (f: (r: ClaimedRow) => void) => (onDeliver = f),
    delivered,
    settle,
    setFree: (n: number) => (slots = n),
  }
}

describe('WalSource', () => {
  test('confirms a transaction only once all its messages and every earlier transaction are settled', async () => {
    const h = await harness()
    const [a1, a2, b1] = [row('a1'), row('a2'), row('b1')]
    h.handlers().onTransaction({ endLsn: 100n, rows: [a1, a2] })
    h.handlers().onTransaction({ endLsn: 200n, rows: [b1] })
    await tick()
    expect(h.delivered.map((r) => r.id)).toEqual(['a1', 'a2', 'b1'])
    h.settle(b1)
    h.settle(a1)
    expect(h.confirmed).toEqual([]) // a2 holds the first transaction, and so the second
    h.settle(a2)
    expect(h.confirmed).toEqual([200n])
    h.handlers().onProgress(300n) // nothing outstanding: a keepalive's position may be confirmed
    expect(h.confirmed).toEqual([200n, 300n])
    await h.source.stop()
  })

  test('hands messages over only as slots free up, in commit order; keepalives do not pass waiting ones', async () => {
    const h = await harness(1)
    const rows = [row('m1'), row('m2'), row('m3')]
    h.handlers().onTransaction({ endLsn: 10n, rows })
    await tick()
    expect(h.delivered.map((r) => r.id)).toEqual(['m1'])
    h.handlers().onProgress(50n)
    h.settle(rows[0]!)
    expect(h.confirmed).toEqual([])
    h.source.pump()
    expect(h.delivered.map((r) => r.id)).toEqual(['m1', 'm2'])
    h.settle(rows[1]!)
    h.source.pump()
    h.settle(rows[2]!)
    expect(h.confirmed.at(-1)).toBe(50n)
    await h.source.stop()
  })

  test('a message is handed over only once the dispatch mark covers its transaction; a drain pays one write per ~MARK_AHEAD/2 messages', async () => {
    const h = await harness(1)
    const n = 3 * MARK_AHEAD
    const endOf = new Map<string, bigint>()
    const uncovered: string[] = []
    h.onDeliver((r) => {
      if (endOf.get(r.id)! > h.mark()) uncovered.push(r.id)
    })
    for (let i = 0; i < n; i++) {
      const r = row(`m${i}`)
      endOf.set(r.id, BigInt(10 * (i + 1)))
      h.handlers().onTransaction({ endLsn: endOf.get(r.id)!, rows: [r] })
    }
    expect(h.delivered).toEqual([]) // the mark is not written yet
    while (h.delivered.length < n) {
      await tick()
      const last = h.delivered.at(-1)
      if (last) h.settle(last)
      h.source.pump()
    }
    expect(uncovered).toEqual([])
    expect(h.delivered.map((r) => r.id)).toEqual([...endOf.keys()])
    expect(h.markWrites.length).toBeLessThanOrEqual(n / (MARK_AHEAD / 2) + 2)
    expect(h.markWrites.length).toBeGreaterThan(1)
    await h.source.stop()
  })

  test('transactions at or below the mark read at connect move into the table, their attempt counted, and are confirmed after the move', async () => {
    const h = await harness(100, 20n)
    const [a, b, c] = [row('a'), row('b'), row('c')]
    h.handlers().onTransaction({ endLsn: 10n, rows: [a, b] })
    h.handlers().onTransaction({ endLsn: 20n, rows: [c] })
    h.handlers().onTransaction({ endLsn: 30n, rows: [row('fresh')] })
    await tick()
    expect(h.moved.map((m) => [m.row.id, m.state, m.attempts, m.error])).toEqual([
      ['a', 'pending', 1, 'replayed'],
      ['b', 'pending', 1, 'replayed'],
      ['c', 'pending', 1, 'replayed'],
    ])
    expect(h.delivered.map((r) => r.id)).toEqual(['fresh'])
    expect(h.confirmed).toEqual([10n, 20n])
    await h.source.stop()
  })

  test('stream events before the mark is read wait for it, in order: a keepalive does not confirm past a waiting transaction', async () => {
    let release!: () => void
    const h = await harness(100, 0n, new Promise<void>((r) => (release = r)))
    h.handlers().onTransaction({ endLsn: 40n, rows: [row('w')] })
    h.handlers().onProgress(90n)
    await tick()
    expect(h.delivered).toEqual([])
    expect(h.confirmed).toEqual([])
    release()
    await tick()
    expect(h.delivered.map((r) => r.id)).toEqual(['w'])
    expect(h.confirmed).toEqual([])
    h.settle(h.delivered[0]!)
    expect(h.confirmed).toEqual([90n])
    await h.source.stop()
  })

  test('a stop with every handed-over message settled sets the mark exactly to the last confirmation', async () => {
    const h = await harness(1)
    const [a, b] = [row('a'), row('b')]
    h.handlers().onTransaction({ endLsn: 10n, rows: [a] })
    h.handlers().onTransaction({ endLsn: 20n, rows: [b] })
    await tick()
    h.settle(a) // b is covered by the mark but never handed over
    await h.source.stop()
    expect(h.markWrites.at(-1)).toEqual([10n, true])
  })

  test('a stop with a handed-over message unsettled leaves the mark ahead', async () => {
    const h = await harness(1)
    h.handlers().onTransaction({ endLsn: 10n, rows: [row('a')] })
    await tick()
    await h.source.stop()
    expect(h.markWrites.every(([, exact]) => !exact)).toBe(true)
  })

  test('a message of a topic without a handler here moves into the table before its transaction is confirmed', async () => {
    const h = await harness()
    h.handlers().onTransaction({ endLsn: 10n, rows: [row('x', 'other')] })
    expect(h.delivered).toEqual([])
    await tick()
    expect(h.moved.map((m) => [m.row.id, m.attempts])).toEqual([['x', 0]])
    expect(h.confirmed).toEqual([10n])
    await h.source.stop()
  })

  test('after the stream ends, what was read and not settled is forgotten (the slot streams it again)', async () => {
    const h = await harness()
    const a = row('a')
    h.handlers().onTransaction({ endLsn: 10n, rows: [a] })
    await tick()
    h.handlers().onEnd(new Error('cut'))
    h.settle(a)
    expect(h.confirmed).toEqual([])
    await h.source.stop()
  })
})
