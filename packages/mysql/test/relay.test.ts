import { testMysqlUri, waitFor } from '@outboxkit/conformance'
import { Cancel, createRelay, type DeliveredMessage, type RelayEvents, Retry } from '@outboxkit/core'
import { mysqlBackend, publish, publishMany } from '@outboxkit/mysql'
import { afterAll, expect, test } from 'vitest'
import { MysqlFixture } from './support.js'

const f = new MysqlFixture()
afterAll(() => f.close())

test('a relay on mysqlBackend delivers end to end: retries, Retry, Cancel, a dead letter at maxAttempts, never a rolled-back message', async () => {
  const outbox = await f.outbox('relay_e2e')
  const conn = await f.pool.getConnection()
  let ids: { ok: string; flaky: string; later: string; cancel: string; doomed: string }
  try {
    await conn.beginTransaction()
    const [ok, flaky, later, cancel, doomed] = await publishMany(outbox, conn, [
      { topic: 'ok', payload: { n: 1, s: 'ü' }, key: 'agg-1', headers: { tenant: 't1' } },
      { topic: 'flaky', payload: 'twice' },
      { topic: 'later', payload: 'retry me' },
      { topic: 'cancel', payload: 'no' },
      { topic: 'doomed', payload: 'always fails' },
    ])
    await conn.commit()
    ids = { ok: ok!.id, flaky: flaky!.id, later: later!.id, cancel: cancel!.id, doomed: doomed!.id }
    await conn.beginTransaction()
    await publish(outbox, conn, { topic: 'ok', payload: 'rolled back' })
    await conn.rollback()
  } finally {
    conn.release()
  }

  const calls: Record<string, DeliveredMessage[]> = {}
  const record = (m: DeliveredMessage) => {
    calls[m.topic] = [...(calls[m.topic] ?? []), m]
  }
  const dead: RelayEvents['deadLettered'][] = []
  const relay = createRelay(outbox, {
    backend: mysqlBackend({ uri: testMysqlUri(), commandTimeoutMs: 10_000 }),
    pollIntervalMs: 25,
    maxAttempts: 3,
    retry: { baseMs: 10, maxMs: 50 },
    keepDelivered: true,
    handlers: {
      ok: async (m) => record(m),
      flaky: async (m) => {
        record(m)
        if (m.attempts < 3) throw new Error(`flaky attempt ${m.attempts}`)
      },
      later: async (m) => {
        record(m)
        if (m.attempts === 1) throw new Retry({ delayMs: 30 })
      },
      cancel: async (m) => {
        record(m)
        throw new Cancel('not wanted')
      },
      doomed: async (m) => {
        record(m)
        throw new Error(`doomed attempt ${m.attempts}`)
      },
    },
  })
  relay.on('deadLettered', (e) => dead.push(e))
  await relay.start()
  try {
    await waitFor(
      async () =>
        (await f.count(outbox, `state IN ('delivered', 'dead')`)) === 5 &&
        (await f.count(outbox, `state NOT IN ('delivered', 'dead')`)) === 0,
      { what: 'every message to be settled', timeoutMs: 20_000 },
    )
  } finally {
    await relay.stop()
  }
  expect(calls.ok).toHaveLength(1)
  expect(calls.ok![0]).toMatchObject({
    id: ids.ok,
    payload: { n: 1, s: 'ü' },
    key: 'agg-1',
    headers: { tenant: 't1' },
    attempts: 1,
  })
  expect(calls.ok![0]!.createdAt).toBeInstanceOf(Date)
  expect(Math.abs(calls.ok![0]!.createdAt.getTime() - Date.now())).toBeLessThan(60_000)
  expect(calls.flaky!.map((m) => m.attempts)).toEqual([1, 2, 3])
  expect(calls.later!.map((m) => m.attempts)).toEqual([1, 2])
  expect(calls.cancel).toHaveLength(1)
  expect(calls.doomed!.map((m) => m.attempts)).toEqual([1, 2, 3])
  const rows = await f.query(`SELECT id, state, attempts, last_error FROM \`${outbox.table.name}\``)
  const byId = new Map(rows.map((r) => [String(r.id), r]))
  expect(byId.get(ids.ok)).toMatchObject({ state: 'delivered', attempts: 1 })
  expect(byId.get(ids.flaky)).toMatchObject({
    state: 'delivered',
    attempts: 3,
    last_error: 'flaky attempt 2',
  })
  expect(byId.get(ids.later)).toMatchObject({ state: 'delivered', attempts: 2 })
  expect(byId.get(ids.cancel)).toMatchObject({ state: 'dead', attempts: 1, last_error: 'not wanted' })
  expect(byId.get(ids.doomed)).toMatchObject({ state: 'dead', attempts: 3, last_error: 'doomed attempt 3' })
  expect(dead.map((d) => d.id).sort()).toEqual([ids.cancel, ids.doomed].sort())
  expect(rows).toHaveLength(5) // the rolled-back message never existed
})

test('a relay on a { pool } backend leaves the pool open after stop()', async () => {
  const outbox = await f.outbox('relay_pool')
  const delivered: string[] = []
  const relay = createRelay(outbox, {
    backend: mysqlBackend({ pool: f.pool }),
    pollIntervalMs: 25,
    handlers: { t: async (m) => void delivered.push(m.id) },
  })
  await relay.start()
  const conn = await f.pool.getConnection()
  let id: string
  try {
    await conn.beginTransaction()
    id = (await publish(outbox, conn, { topic: 't', payload: 1 })).id
    await conn.commit()
  } finally {
    conn.release()
  }
  await waitFor(() => delivered.includes(id), { what: 'the delivery' })
  await relay.stop()
  await waitFor(async () => (await f.count(outbox)) === 0, { what: 'the row to be deleted' })
  const [r] = await f.pool.query('SELECT 1 AS one')
  expect((r as { one: number }[])[0]!.one).toBe(1)
})
