import { serverInspector, testDatabaseUrl, uniqueTableName, waitFor } from '@outboxkit/conformance'
import { createRelay, defineOutbox, isOutboxError, migrate, type OutboxBackend } from '@outboxkit/core'
import { postgresJsBackend } from '@outboxkit/postgres-js'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type SilentServer, silentServer } from './silent-server.js'

const BOUND = 300
const outbox = defineOutbox({ table: uniqueTableName('pjs_timeout') })
const claimRequest = { table: outbox.table, topics: ['t'], limit: 10, leaseMs: 30_000, maxAttempts: 10 }

/** Runs `fn` and returns its error and how long it took. */
async function timed(fn: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now()
  const error = await fn().then(
    () => undefined,
    (e: unknown) => e,
  )
  return { error, ms: Date.now() - started }
}

function expectTimeout(error: unknown): void {
  expect(isOutboxError(error, 'TIMEOUT'), String(error)).toBe(true)
  expect(String((error as Error).message)).toContain('[outboxkit] [postgres-js]')
}

describe('a server that accepts connections and never answers', () => {
  let server: SilentServer
  let sql: postgres.Sql
  beforeAll(async () => {
    server = await silentServer()
    // postgres.js' own connect_timeout (30 s) is left as it is: commandTimeoutMs must win.
    sql = postgres(server.url, { max: 2, onnotice: () => {} })
  })
  afterAll(async () => {
    await sql.end({ timeout: 0 })
    await server.close()
  })

  test('claim, settle and migrate fail with TIMEOUT within the bound, on your sql', async () => {
    const backend = postgresJsBackend(sql, { commandTimeoutMs: BOUND })
    const claim = await timed(() => backend.claim(claimRequest))
    expectTimeout(claim.error)
    expect(claim.ms).toBeGreaterThanOrEqual(BOUND - 5)
    expect(claim.ms).toBeLessThan(BOUND + 1_000)
    const settle = await timed(() =>
      backend.settle({
        table: outbox.table,
        keepDelivered: false,
        settlements: [{ id: '0190a0a0-0000-7000-8000-000000000000', attempts: 1, outcome: 'delivered' }],
      }),
    )
    expectTimeout(settle.error)
    expect(settle.ms).toBeLessThan(BOUND + 1_000)
    const mig = await timed(() => migrate(outbox, backend))
    expectTimeout(mig.error)
    expect(mig.ms).toBeLessThan(4 * BOUND + 1_000)
    expect(server.accepted).toBeGreaterThan(0)
    await backend.close()
  })

  test('listen returns within the bound and reports TIMEOUT through onError', async () => {
    const backend = postgresJsBackend(sql, { commandTimeoutMs: BOUND })
    const errors: unknown[] = []
    let connected = false
    const started = Date.now()
    const sub = await backend.listen!(outbox.channel, {
      onWake: () => {},
      onError: (e) => errors.push(e),
      onConnect: () => {
        connected = true
      },
    })
    expect(Date.now() - started).toBeLessThan(BOUND + 1_000)
    expect(connected).toBe(false)
    expect(errors.some((e) => isOutboxError(e, 'TIMEOUT'))).toBe(true)
    const closing = await timed(() => sub.close())
    expect(closing.ms).toBeLessThan(BOUND + 1_000)
  })

  test('a relay starts, reports TIMEOUT errors, and stops promptly', async () => {
    const backend = postgresJsBackend(sql, { commandTimeoutMs: BOUND })
    const relay = createRelay(outbox, { backend, pollIntervalMs: 50, handlers: { t: async () => {} } })
    const errors: { error: unknown; during: string }[] = []
    relay.on('error', (e) => errors.push(e))
    const start = await timed(() => relay.start())
    expect(start.error).toBeUndefined()
    expect(start.ms).toBeLessThan(BOUND + 1_000)
    await waitFor(() => errors.some((e) => e.during === 'claim' && isOutboxError(e.error, 'TIMEOUT')), {
      what: 'a claim TIMEOUT',
      timeoutMs: 5_000,
    })
    const stop = await timed(() => relay.stop({ graceMs: 100 }))
    expect(stop.error).toBeUndefined()
    expect(stop.ms).toBeLessThan(BOUND + 2_000)
  })

  test('the owned form bounds connecting too, and close() does not hang', async () => {
    const backend = postgresJsBackend({ url: server.url, commandTimeoutMs: BOUND })
    const claim = await timed(() => backend.claim(claimRequest))
    expectTimeout(claim.error)
    expect(claim.ms).toBeLessThan(BOUND + 1_000)
    const close = await timed(() => backend.close())
    expect(close.error).toBeUndefined()
    expect(close.ms).toBeLessThan(BOUND + 1_000)
  })
})

describe('a live server', () => {
  let sql: postgres.Sql
  let backend: OutboxBackend
  const inspector = serverInspector()
  beforeAll(async () => {
    sql = postgres(testDatabaseUrl(), { max: 4, onnotice: () => {} })
    backend = postgresJsBackend(sql, { commandTimeoutMs: BOUND })
    await migrate(outbox, backend)
  })
  afterAll(async () => {
    await inspector.query(`DROP TABLE IF EXISTS ${outbox.table.name}`)
    await inspector.close()
    await sql.end()
  })

  test('a statement that outlives the bound is cancelled on the server, so it does not apply later', async () => {
    const [row] = await inspector.query<{ id: string }>(
      `INSERT INTO ${outbox.table.name} (id, topic, payload, state, attempts)
       VALUES (gen_random_uuid(), 't', '{}', 'processing', 1) RETURNING id::text AS id`,
    )
    const locker = postgres(testDatabaseUrl(), { max: 1, onnotice: () => {} })
    let release!: () => void
    const released = new Promise<void>((r) => {
      release = r
    })
    let locked!: () => void
    const isLocked = new Promise<void>((r) => {
      locked = r
    })
    const holder = locker.begin(async (tx) => {
      await tx`SELECT 1 FROM ${tx(outbox.table.name)} WHERE id = ${row!.id}::uuid FOR UPDATE`
      locked()
      await released
    })
    try {
      await isLocked
      const settle = await timed(() =>
        backend.settle({
          table: outbox.table,
          keepDelivered: true,
          settlements: [{ id: row!.id, attempts: 1, outcome: 'delivered' }],
        }),
      )
      expectTimeout(settle.error)
      expect(settle.ms).toBeLessThan(BOUND + 1_000)
      // The cancelled UPDATE is no longer waiting for the lock.
      await waitFor(
        async () =>
          (
            await inspector.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`,
              [outbox.table.name],
            )
          )[0]!.n === 0,
        { what: 'the settle to be cancelled', timeoutMs: 5_000 },
      )
    } finally {
      release()
      await holder
      await locker.end()
    }
    const [after] = await inspector.query(`SELECT state FROM ${outbox.table.name} WHERE id = $1`, [row!.id])
    expect(after!.state).toBe('processing')
  })
})
