import { describe, expect, test } from 'vitest'
import { defineOutbox } from '../../src/outbox/define-outbox.js'
import type { ClaimedRow } from '../../src/protocol/backend.js'
import type { OutboxWal, WalReadHandlers } from '../../src/protocol/wal.js'
import { WalSource } from '../../src/relay/wal-source.js'
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

async function harness(free = 100) {
  const confirmed: bigint[] = []
  const moved: string[] = []
  let handlers!: WalReadHandlers
  const wal: OutboxWal = {
    check: async () => {},
    read: async (_o, h) => {
      handlers = h
      return { confirm: (lsn) => void confirmed.push(lsn), pause() {}, resume() {}, close: async () => {} }
    },
    moveToTable: async (_t, moves) => void moved.push(...moves.map((m) => m.row.id)),
    slotStats: async () => null,
    dropSlot: async () => true,
  }
  const delivered: ClaimedRow[] = []
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
      delivered.push(...rows)
    },
    reportError: () => {},
  })
  source.start()
  await new Promise((r) => setImmediate(r))
  const settle = (...rows: ClaimedRow[]) => {
    slots += rows.length
    source.settled(rows)
  }
  return {
    source,
    handlers: () => handlers,
    confirmed,
    moved,
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

  test('a message of a topic without a handler here moves into the table before its transaction is confirmed', async () => {
    const h = await harness()
    h.handlers().onTransaction({ endLsn: 10n, rows: [row('x', 'other')] })
    expect(h.delivered).toEqual([])
    await new Promise((r) => setImmediate(r))
    expect(h.moved).toEqual(['x'])
    expect(h.confirmed).toEqual([10n])
    await h.source.stop()
  })

  test('after the stream ends, what was read and not settled is forgotten (the slot streams it again)', async () => {
    const h = await harness()
    const a = row('a')
    h.handlers().onTransaction({ endLsn: 10n, rows: [a] })
    h.handlers().onEnd(new Error('cut'))
    h.settle(a)
    expect(h.confirmed).toEqual([])
    await h.source.stop()
  })
})
