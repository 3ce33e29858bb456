import { waitFor } from '@outboxkit/conformance'
import { defineOutbox, isOutboxError, type Outbox } from '@outboxkit/core'
import {
  POSTGRES_TRANSACTION_MARKER,
  type PreparedMessage,
  postgresPublishStatement,
  readPostgresPublishResult,
} from '@outboxkit/core/adapter'
import { publish, publishMany } from '@outboxkit/pg'
import type pg from 'pg'
import { uuidv7 } from 'uuidv7'
import { afterAll, describe, expect, test } from 'vitest'
import { Harness, tableSql } from './support/harness.js'

const h = new Harness()
afterAll(() => h.close())

const seqOf = async (outbox: Outbox<any>) =>
  h.query<{ id: string; topic: string; key: string | null; seq: string | null; label: string }>(
    `SELECT id::text AS id, topic, key, seq::text AS seq, payload->>'label' AS label FROM ${tableSql(outbox)} ORDER BY seq NULLS LAST, id`,
  )

/** Backend pids waiting on an advisory lock. */
const advisoryWaiters = async () =>
  (
    await h.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND datname = current_database()`,
    )
  ).map((r) => r.pid)

/** Opens a transaction on a client of its own; the caller commits or rolls back. */
async function begin(): Promise<{
  client: pg.PoolClient
  pid: number
  end(sql: 'COMMIT' | 'ROLLBACK'): Promise<void>
}> {
  const client = await h.pool.connect()
  const [{ pid }] = (await client.query('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }]
  await client.query('BEGIN')
  return {
    client,
    pid,
    async end(sql) {
      try {
        await client.query(sql)
      } finally {
        client.release()
      }
    },
  }
}

function prepared(topic: string, key: string, label: string, id = uuidv7()): PreparedMessage {
  return { id, topic, key, payload: JSON.stringify({ label }), headers: '{}', delayMs: 0, dedupKey: null }
}

describe('publish to an ordered topic', () => {
  test('numbers messages of ordered topics (seq), in batch order; other topics stay unnumbered', async () => {
    const outbox = await h.outbox('ord_seq', { orderedTopics: ['o'] })
    await h.transaction(async (client) => {
      await publishMany(outbox, client, [
        { topic: 'o', key: 'b', payload: { label: 'b1' } },
        { topic: 'u', key: 'b', payload: { label: 'u1' } },
        { topic: 'o', key: 'a', payload: { label: 'a1' } },
        { topic: 'o', key: 'b', payload: { label: 'b2' } },
      ])
      await publish(outbox, client, { topic: 'o', key: 'a', payload: { label: 'a2' } })
    })
    const rows = await seqOf(outbox)
    expect(rows.map((r) => r.label)).toEqual(['b1', 'a1', 'b2', 'a2', 'u1'])
    expect(rows.at(-1)!.seq).toBeNull()
    const seqs = rows.slice(0, 4).map((r) => BigInt(r.seq!))
    expect([...seqs].sort((x, y) => (x < y ? -1 : 1))).toEqual(seqs)
  })

  test('a second producer of the same key waits for the first transaction, then is numbered after it, even with a smaller id', async () => {
    const outbox = await h.outbox('ord_lock', { orderedTopics: ['o'] })
    // B's id is generated first (so it sorts first), but A's statement takes the key's lock first.
    const b = prepared('o', 'k', 'B')
    const a = prepared('o', 'k', 'A')
    expect(b.id < a.id).toBe(true)
    const txA = await begin()
    const txB = await begin()
    try {
      const stA = postgresPublishStatement(outbox, [a])
      expect(readPostgresPublishResult([a], (await txA.client.query(stA.text, stA.values)).rows)).toEqual([
        { id: a.id, published: true },
      ])
      const stB = postgresPublishStatement(outbox, [b])
      const bDone = txB.client.query(stB.text, stB.values)
      await waitFor(async () => (await advisoryWaiters()).includes(txB.pid), {
        what: "B's publish to wait on the key's advisory lock",
      })

      // Another key, an unordered topic with the same key, and a plain publish do not wait.
      await h.transaction(async (client) => {
        await publish(outbox, client, { topic: 'o', key: 'other', payload: { label: 'other' } })
        await publish(outbox, client, { topic: 'u', key: 'k', payload: { label: 'unordered' } })
      })
      expect(await advisoryWaiters()).toContain(txB.pid)

      await txA.end('COMMIT')
      await bDone
      await txB.end('COMMIT')
    } finally {
      await txA.end('ROLLBACK').catch(() => {})
      await txB.end('ROLLBACK').catch(() => {})
    }
    const rows = (await seqOf(outbox)).filter((r) => r.key === 'k' && r.topic === 'o')
    expect(rows.map((r) => r.label)).toEqual(['A', 'B'])
  })

  test('the lock is held to the end of the transaction: a rolled-back producer releases the key, writes nothing', async () => {
    const outbox = await h.outbox('ord_rollback', { orderedTopics: ['o'] })
    const txA = await begin()
    const txB = await begin()
    try {
      await publish(outbox, txA.client, { topic: 'o', key: 'k', payload: { label: 'A' } })
      const bDone = publish(outbox, txB.client, { topic: 'o', key: 'k', payload: { label: 'B' } })
      await waitFor(async () => (await advisoryWaiters()).includes(txB.pid), { what: 'B to wait' })
      await txA.end('ROLLBACK')
      expect((await bDone).published).toBe(true)
      await txB.end('COMMIT')
    } finally {
      await txA.end('ROLLBACK').catch(() => {})
      await txB.end('ROLLBACK').catch(() => {})
    }
    expect((await seqOf(outbox)).map((r) => r.label)).toEqual(['B'])
  })

  test('the guarded statement (postgres.js, Drizzle) takes the lock and numbers the row too', async () => {
    const outbox = await h.outbox('ord_guarded', { orderedTopics: ['o'] })
    const m1 = prepared('o', 'k', 'one')
    const [m2, m3] = [prepared('o', 'k', 'two'), prepared('u', 'k', 'three')]
    await h.transaction(async (client) => {
      await client.query(POSTGRES_TRANSACTION_MARKER)
      const one = postgresPublishStatement(outbox, [m1], { guarded: true })
      expect(one.name).toBe('outboxkit_publish_one_ordered_guarded')
      await client.query(one.text, one.values)
      await client.query(POSTGRES_TRANSACTION_MARKER)
      const many = postgresPublishStatement(outbox, [m2, m3], { guarded: true })
      expect(many.name).toBe('outboxkit_publish_many_ordered_guarded')
      await client.query(many.text, many.values)
    })
    const rows = await seqOf(outbox)
    expect(rows.map((r) => [r.label, r.seq === null])).toEqual([
      ['one', false],
      ['two', false],
      ['three', true],
    ])
    // Outside a transaction the guarded statement writes nothing and takes no lasting lock.
    const client = await h.pool.connect()
    try {
      const st = postgresPublishStatement(outbox, [prepared('o', 'k', 'autocommit')], { guarded: true })
      await client.query(st.text, st.values)
    } finally {
      client.release()
    }
    expect(await seqOf(outbox)).toHaveLength(3)
  })

  test('dedupKey still makes a second publish a no-op', async () => {
    const outbox = await h.outbox('ord_dedup', { orderedTopics: ['o'] })
    const first = await h.publish(outbox, [{ topic: 'o', key: 'k', payload: { label: 'x' }, dedupKey: 'd' }])
    const again = await h.publish(outbox, [{ topic: 'o', key: 'k', payload: { label: 'y' }, dedupKey: 'd' }])
    expect(again).toEqual([{ id: first[0]!.id, published: false }])
    expect((await seqOf(outbox)).map((r) => r.label)).toEqual(['x'])
  })

  test('an ordered topic without a key is refused with INVALID_MESSAGE and nothing is written', async () => {
    const outbox = await h.outbox('ord_nokey', { orderedTopics: ['o'] })
    for (const key of [undefined, null]) {
      const err = await h
        .publish(outbox, [
          { topic: 'u', payload: { label: 'fine' } },
          { topic: 'o', key, payload: { label: 'no key' } },
        ])
        .catch((e: unknown) => e)
      expect(isOutboxError(err, 'INVALID_MESSAGE')).toBe(true)
      expect(String(err)).toMatch(/ordered, so every message needs a key/)
    }
    expect(await seqOf(outbox)).toEqual([])
  })
})

describe('defineOutbox orderedTopics', () => {
  test('accepts names and { topic, onDeadLetter }', () => {
    const outbox = defineOutbox({
      orderedTopics: ['a', { topic: 'b' }, { topic: 'c', onDeadLetter: 'continue' }, 'a'],
    })
    expect([...outbox.orderedTopics]).toEqual(['a', 'b', 'c'])
    expect([...outbox.deadLetterContinues]).toEqual(['c'])
    expect(defineOutbox().orderedTopics.size).toBe(0)
  })

  test('refuses invalid entries with INVALID_CONFIG', () => {
    const topics = {
      a: { '~standard': { version: 1, vendor: 'x', validate: (v: unknown) => ({ value: v }) } },
    }
    const cases: unknown[] = [
      { orderedTopics: 'a' },
      { orderedTopics: [''] },
      { orderedTopics: [42] },
      { orderedTopics: [{ topic: 'a', onDeadLetter: 'skip' }] },
      { orderedTopics: ['a', { topic: 'a', onDeadLetter: 'continue' }] },
      { topics, orderedTopics: ['b'] },
    ]
    for (const options of cases) {
      let err: unknown
      try {
        defineOutbox(options as never)
      } catch (e) {
        err = e
      }
      expect(isOutboxError(err, 'INVALID_CONFIG'), JSON.stringify(options)).toBe(true)
    }
  })
})
