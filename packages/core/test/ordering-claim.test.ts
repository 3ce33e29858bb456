import { PGlite } from '@electric-sql/pglite'
import { waitFor } from '@outboxkit/conformance'
import {
  Cancel,
  createRelay,
  defineOutbox,
  discard,
  listBlockedKeys,
  migrate,
  type Outbox,
  type OutboxBackend,
  outboxDdl,
  Retry,
  redrive,
} from '@outboxkit/core'
import type { ClaimRequest } from '@outboxkit/core/adapter'
import { pgliteBackend, publishMany as pglitePublishMany } from '@outboxkit/pglite'
import { afterAll, afterEach, describe, expect, test } from 'vitest'
import { Harness, observeFor, tableSql } from './support/harness.js'

const h = new Harness()

/** Messages of the ordered topic `o` on one key `k`, in this order, each carrying its label. */
const keyed = (...labels: string[]) => labels.map((label) => ({ topic: 'o', key: 'k', payload: { label } }))
afterEach(() => h.cleanup())
afterAll(() => h.close())

function claimRequest(outbox: Outbox<any>, overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    table: outbox.table,
    topics: [...outbox.orderedTopics, 'u'],
    limit: 50,
    leaseMs: 30_000,
    maxAttempts: 10,
    ordering: { continueAfterDead: [...outbox.deadLetterContinues] },
    ...overrides,
  }
}

/** Claims and returns the payload labels, sorted. */
async function claimLabels(backend: OutboxBackend, request: ClaimRequest) {
  const rows = await backend.claim(request)
  return {
    rows,
    labels: rows.map((r) => (JSON.parse(r.payload) as { label: string }).label).sort(),
  }
}

/** A relay on `topics` that records each handler call as `label` (or `label!` when it throws). */
function recordingRelay(
  outbox: Outbox<any>,
  topics: string[],
  behave: (label: string, attempts: number) => void | Promise<void> = () => {},
) {
  const log: string[] = []
  const handler = async (m: { payload: unknown; attempts: number }) => {
    const { label } = m.payload as { label: string }
    try {
      await behave(label, m.attempts)
      log.push(label)
    } catch (err) {
      log.push(`${label}!`)
      throw err
    }
  }
  const relay = h.relay(outbox, {
    handlers: Object.fromEntries(topics.map((t) => [t, handler])),
    pollIntervalMs: 40,
    notify: false,
    retry: { baseMs: 10, maxMs: 20 },
  })
  return { relay, log }
}

describe('claim: only the head of each key', () => {
  test('one message per key per claim; the next one once the head is settled; unordered rows are free', async () => {
    const outbox = await h.outbox('ord_head', { orderedTopics: ['o'] })
    await h.publish(outbox, [
      { topic: 'o', key: 'k1', payload: { label: 'k1-1' } },
      { topic: 'o', key: 'k2', payload: { label: 'k2-1' } },
      { topic: 'o', key: 'k1', payload: { label: 'k1-2' } },
      { topic: 'u', key: 'k1', payload: { label: 'u-1' } },
      { topic: 'u', key: 'k1', payload: { label: 'u-2' } },
      { topic: 'o', key: 'k1', payload: { label: 'k1-3' } },
    ])
    const backend = h.backend()
    const first = await claimLabels(backend, claimRequest(outbox))
    expect(first.labels).toEqual(['k1-1', 'k2-1', 'u-1', 'u-2'])
    expect(first.rows.filter((r) => r.topic === 'o').every((r) => r.ordered === true)).toBe(true)
    expect(first.rows.filter((r) => r.topic === 'u').every((r) => r.ordered === undefined)).toBe(true)
    expect((await claimLabels(backend, claimRequest(outbox))).labels).toEqual([])

    const k1 = first.rows.find((r) => r.key === 'k1' && r.topic === 'o')!
    // A retry keeps the head in place: nothing of k1 is claimable while it waits.
    await backend.settle({
      table: outbox.table,
      keepDelivered: false,
      settlements: [{ id: k1.id, attempts: 1, outcome: 'retry', delayMs: 60_000, error: 'later' }],
    })
    expect((await claimLabels(backend, claimRequest(outbox))).labels).toEqual([])
    await h.query(`UPDATE ${tableSql(outbox)} SET available_at = now() WHERE id = $1`, [k1.id])
    const again = await claimLabels(backend, claimRequest(outbox))
    expect(again.labels).toEqual(['k1-1'])
    await backend.settle({
      table: outbox.table,
      keepDelivered: true,
      settlements: [{ id: k1.id, attempts: 2, outcome: 'delivered' }],
    })
    // Delivered (kept) rows do not hold their key.
    expect((await claimLabels(backend, claimRequest(outbox))).labels).toEqual(['k1-2'])
  })

  test('without `ordering` in the request (a relay of unordered topics) the claim ignores order', async () => {
    const outbox = await h.outbox('ord_plain', { orderedTopics: ['o'] })
    await h.publish(outbox, keyed('a', 'b'))
    const { labels } = await claimLabels(h.backend(), claimRequest(outbox, { ordering: undefined }))
    expect(labels).toEqual(['a', 'b'])
  })

  test('a head dead-lettered at claim (attempts used up) blocks its key', async () => {
    const outbox = await h.outbox('ord_dead_claim', { orderedTopics: ['o'] })
    await h.publish(outbox, keyed('a', 'b'))
    const backend = h.backend()
    expect((await claimLabels(backend, claimRequest(outbox, { leaseMs: 1, maxAttempts: 1 }))).labels).toEqual(
      ['a'],
    )
    const dead = await waitFor(async () => {
      const rows = await backend.claim(claimRequest(outbox, { maxAttempts: 1 }))
      return rows.length > 0 ? rows : undefined
    })
    expect(dead.map((r) => r.state)).toEqual(['dead'])
    expect((await claimLabels(backend, claimRequest(outbox))).labels).toEqual([])
  })
})

describe('relay: per-key order with head-of-line blocking', () => {
  test('a failing head holds its key while it retries (backoff and Retry({ delayMs }))', async () => {
    const outbox = await h.outbox('ord_retry', { orderedTopics: ['o'] })
    const { relay, log } = recordingRelay(outbox, ['o'], (label, attempts) => {
      if (label === 'a' && attempts === 1) throw new Error('transient')
      if (label === 'a' && attempts === 2) throw new Retry({ delayMs: 150 })
    })
    await h.publish(outbox, keyed('a', 'b', 'c'))
    await relay.start()
    await waitFor(() => log.length === 5, { what: 'five handler calls' })
    expect(log).toEqual(['a!', 'a!', 'a', 'b', 'c'])
  })

  test('a delayed message keeps its place: later messages of its key wait for it', async () => {
    const outbox = await h.outbox('ord_delay', { orderedTopics: ['o'] })
    const { relay, log } = recordingRelay(outbox, ['o', 'u'])
    await h.publish(outbox, [
      { topic: 'o', key: 'k', payload: { label: 'delayed' }, delayMs: 300 },
      { topic: 'o', key: 'k', payload: { label: 'next' } },
      { topic: 'u', key: 'k', payload: { label: 'unordered' } },
    ])
    await relay.start()
    await waitFor(() => log.length === 3, { what: 'three deliveries' })
    expect(log).toEqual(['unordered', 'delayed', 'next'])
  })

  test('a dead head blocks its key by default; listBlockedKeys shows it; redrive delivers it first', async () => {
    const outbox = await h.outbox('ord_block', { orderedTopics: ['o'] })
    let fixed = false
    const { relay, log } = recordingRelay(outbox, ['o'], (label) => {
      if (label === 'a' && !fixed) throw new Cancel('poison')
    })
    const [a] = await h.publish(outbox, [
      { topic: 'o', key: 'k', payload: { label: 'a' } },
      { topic: 'o', key: 'k', payload: { label: 'b' } },
      { topic: 'o', key: 'other', payload: { label: 'other' } },
    ])
    await relay.start()
    await waitFor(() => log.includes('a!') && log.includes('other'), { what: 'a dead, other delivered' })
    await observeFor(300) // several polls: b must stay blocked behind the dead head
    expect(log.filter((l) => l.startsWith('b'))).toEqual([])

    const backend = h.backend()
    const blocked = await listBlockedKeys(outbox, backend)
    expect(blocked).toHaveLength(1)
    expect(blocked[0]).toMatchObject({
      key: 'k',
      reason: 'dead',
      waiting: 1,
      head: { id: a!.id, topic: 'o', attempts: 1, lastError: 'poison' },
    })
    expect(blocked[0]!.head.since).toBeInstanceOf(Date)

    fixed = true
    expect(await redrive(outbox, backend, { ids: [a!.id] })).toBe(1)
    await waitFor(() => log.includes('b'), { what: 'b after the redriven head' })
    expect(log.filter((l) => l !== 'other')).toEqual(['a!', 'a', 'b'])
    expect(await listBlockedKeys(outbox, backend)).toEqual([])
  })

  test('discarding the dead head unblocks its key', async () => {
    const outbox = await h.outbox('ord_discard', { orderedTopics: ['o'] })
    const { relay, log } = recordingRelay(outbox, ['o'], (label) => {
      if (label === 'a') throw new Cancel('poison')
    })
    const [a] = await h.publish(outbox, keyed('a', 'b'))
    await relay.start()
    await waitFor(async () => (await h.row(outbox, a!.id))?.state === 'dead', { what: 'a dead' })
    expect(log).toEqual(['a!'])
    expect(await discard(outbox, h.backend(), { ids: [a!.id] })).toBe(1)
    await waitFor(() => log.includes('b'), { what: 'b after the discarded head' })
    expect(log).toEqual(['a!', 'b'])
  })

  test("onDeadLetter: 'continue' lets later messages of the key proceed past a dead one", async () => {
    const outbox = await h.outbox('ord_continue', {
      orderedTopics: [{ topic: 'o', onDeadLetter: 'continue' }],
    })
    const { relay, log } = recordingRelay(outbox, ['o'], (label) => {
      if (label === 'a') throw new Cancel('poison')
    })
    await h.publish(outbox, keyed('a', 'b', 'c'))
    await relay.start()
    await waitFor(() => log.length === 3, { what: 'three handler calls' })
    expect(log).toEqual(['a!', 'b', 'c'])
    expect(await listBlockedKeys(outbox, h.backend())).toEqual([])
  })

  test('order holds across the ordered topics of an outbox, even when different relays handle them', async () => {
    const outbox = await h.outbox('ord_cross', { orderedTopics: ['created', 'shipped'] })
    await h.publish(outbox, [
      { topic: 'created', key: 'order-1', payload: { label: 'created' } },
      { topic: 'shipped', key: 'order-1', payload: { label: 'shipped' } },
    ])
    const shipping = recordingRelay(outbox, ['shipped'])
    await shipping.relay.start()
    await observeFor(250) // several polls: 'shipped' waits for 'created', which no relay handles yet
    expect(shipping.log).toEqual([])
    const creating = recordingRelay(outbox, ['created'])
    await creating.relay.start()
    await waitFor(() => shipping.log.length === 1, { what: "'shipped' after 'created'" })
    expect(creating.log).toEqual(['created'])
  })

  test('listBlockedKeys with includeRetrying shows a retrying head; pages by key', async () => {
    const outbox = await h.outbox('ord_list', {
      orderedTopics: ['o', { topic: 'c', onDeadLetter: 'continue' }],
    })
    const rows = await h.publish(outbox, [
      { topic: 'o', key: 'k1', payload: { label: 'k1a' } },
      { topic: 'o', key: 'k1', payload: { label: 'k1b' } },
      { topic: 'o', key: 'k2', payload: { label: 'k2a' } },
      { topic: 'o', key: 'k3', payload: { label: 'k3a' } },
      { topic: 'o', key: 'k3', payload: { label: 'k3b' } },
      { topic: 'o', key: 'k3', payload: { label: 'k3c' } },
      { topic: 'c', key: 'k4', payload: { label: 'k4a' } },
      { topic: 'c', key: 'k4', payload: { label: 'k4b' } },
    ])
    const [k1a, , k2a, k3a, , , k4a] = rows.map((r) => r.id)
    const t = tableSql(outbox)
    await h.query(
      `UPDATE ${t} SET state = 'dead', attempts = 3, last_error = 'boom' WHERE id = ANY($1::uuid[])`,
      [[k1a, k3a, k4a]],
    )
    await h.query(
      `UPDATE ${t} SET attempts = 2, last_error = 'flaky', available_at = now() + interval '1 minute' WHERE id = $1`,
      [k2a],
    )
    const backend = h.backend()
    const dead = await listBlockedKeys(outbox, backend)
    expect(dead.map((b) => [b.key, b.reason, b.waiting])).toEqual([
      ['k1', 'dead', 1],
      ['k3', 'dead', 2],
    ])
    const all = await listBlockedKeys(outbox, backend, { includeRetrying: true })
    expect(all.map((b) => [b.key, b.reason, b.head.lastError])).toEqual([
      ['k1', 'dead', 'boom'],
      ['k2', 'retrying', 'flaky'],
      ['k3', 'dead', 'boom'],
    ])
    const page1 = await listBlockedKeys(outbox, backend, { includeRetrying: true, limit: 2 })
    const page2 = await listBlockedKeys(outbox, backend, {
      includeRetrying: true,
      limit: 2,
      afterKey: page1.at(-1)!.key,
    })
    expect([...page1, ...page2].map((b) => b.key)).toEqual(['k1', 'k2', 'k3'])
    expect((await listBlockedKeys(outbox, backend, { topics: ['c'] })).map((b) => b.key)).toEqual([])
  })
})

describe('migrate and other backends', () => {
  test('migrate upgrades a table created before ordering, and stays idempotent', async () => {
    const outbox = await h.outbox('ord_upgrade', { orderedTopics: ['o'], migrate: false })
    const t = tableSql(outbox)
    // The DDL of the version before ordering: the table and its two indexes only.
    const before = outboxDdl(outbox)
      .split(';\n')
      .filter((s) => !/seq/.test(s))
      .join(';\n')
    await h.query(before)
    await h.query(
      `INSERT INTO ${t} (id, topic, key, payload) VALUES (gen_random_uuid(), 'o', 'k', '{"label":"old"}')`,
    )
    const backend = h.backend()
    await migrate(outbox, backend)
    await migrate(outbox, backend)
    const columns = await h.query(
      `SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = $1 AND column_name = 'seq'`,
      [outbox.table.name],
    )
    expect(columns).toEqual([{ column_name: 'seq', data_type: 'bigint', is_nullable: 'YES' }])
    const indexes = await h.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY indexname`,
      [outbox.table.name],
    )
    expect(indexes.map((i) => i.indexname)).toContain(`${outbox.table.name}_key_seq_idx`)
    await h.publish(outbox, [{ topic: 'o', key: 'k', payload: { label: 'new' } }])
    const rows = await h.query<{ label: string; seq: string | null }>(
      `SELECT payload->>'label' AS label, seq::text AS seq FROM ${t} ORDER BY created_at, seq`,
    )
    expect(rows.map((r) => [r.label, r.seq === null])).toEqual([
      ['old', true],
      ['new', false],
    ])
  })

  test('PGlite: ordered publish and head-only claims', async () => {
    const db = new PGlite()
    try {
      const outbox = defineOutbox({ table: 'lite_outbox', orderedTopics: ['o'] })
      const backend = pgliteBackend(db)
      await migrate(outbox, backend)
      await db.transaction((tx) =>
        pglitePublishMany(outbox, tx, [
          { topic: 'o', key: 'k', payload: { label: 'a' } },
          { topic: 'o', key: 'k', payload: { label: 'b' } },
        ]),
      )
      const log: string[] = []
      const relay = createRelay(outbox, {
        backend,
        handlers: { o: (m) => void log.push((m.payload as { label: string }).label) },
        pollIntervalMs: 20,
        notify: false,
      })
      await relay.start()
      await waitFor(() => log.length === 2, { what: 'two deliveries on PGlite' })
      await relay.stop({ graceMs: 0 })
      expect(log).toEqual(['a', 'b'])
    } finally {
      await db.close()
    }
  })
})
