import {
  invalidConfigMessage,
  serverInspector,
  testDatabaseUrl,
  uniqueTableName,
  waitFor,
} from '@outboxkit/conformance'
import { createRelay, type DeliveredMessage, defineOutbox, migrate } from '@outboxkit/core'
import { postgresJsBackend, publish } from '@outboxkit/postgres-js'
import postgres from 'postgres'
import { afterAll, beforeAll, expect, test, vi } from 'vitest'

const outbox = defineOutbox({ table: uniqueTableName('pjs_backend') })
const inspector = serverInspector()
let sql: postgres.Sql

beforeAll(async () => {
  sql = postgres(testDatabaseUrl(), { max: 4, onnotice: () => {} })
  await migrate(outbox, postgresJsBackend(sql))
})
afterAll(async () => {
  await inspector.query(`DROP TABLE IF EXISTS ${outbox.table.name}`)
  await inspector.close()
  await sql.end()
})

test('only the root sql of postgres() is accepted, and options are checked', async () => {
  const invalid = (fn: () => unknown) => invalidConfigMessage('postgres-js', fn)
  await sql.begin(async (tx) => {
    expect(invalid(() => postgresJsBackend(tx as never))).toMatch(/transaction sql/)
  })
  const reserved = await sql.reserve()
  expect(invalid(() => postgresJsBackend(reserved as never))).toMatch(/reserved connection/)
  reserved.release()
  expect(invalid(() => postgresJsBackend(null as never))).toMatch(/got null/)
  expect(invalid(() => postgresJsBackend({ connectionString: 'x' } as never))).toMatch(/\{ url/)
  expect(invalid(() => postgresJsBackend(sql, { commandTimeoutMs: 0 }))).toMatch(/commandTimeoutMs/)
  expect(invalid(() => postgresJsBackend({ url: testDatabaseUrl(), commandTimeoutMs: Number.NaN }))).toMatch(
    /commandTimeoutMs/,
  )
})

test('relay.stop() leaves your sql open; an owned sql is ended by close() and reopened on next use', async () => {
  const got: DeliveredMessage[] = []
  const relay = createRelay(outbox, {
    backend: postgresJsBackend(sql),
    pollIntervalMs: 50,
    handlers: { 'own.yours': async (m: DeliveredMessage) => void got.push(m) },
  })
  await relay.start()
  await sql.begin((tx) => publish(outbox, tx, { topic: 'own.yours', payload: 1 }))
  await waitFor(() => got.length === 1, { what: 'a delivery' })
  await relay.stop()
  expect((await sql`SELECT 1 AS one`)[0]!.one).toBe(1)

  const owned = postgresJsBackend({
    url: testDatabaseUrl(),
    connection: { application_name: 'outboxkit-owned-test' },
  })
  const claim = () =>
    owned.claim({ table: outbox.table, topics: ['none'], limit: 1, leaseMs: 1_000, maxAttempts: 3 })
  const connections = async () =>
    Number(
      (
        await inspector.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'outboxkit-owned-test'`,
        )
      )[0]!.n,
    )
  await claim()
  expect(await connections()).toBeGreaterThan(0)
  await owned.close()
  await waitFor(async () => (await connections()) === 0, { what: 'the owned connections to close' })
  expect(await claim()).toEqual([])
  await owned.close()
})

test('listen reconnects by itself: onError then onConnect after the connection is cut, wakes again, silent after close', async () => {
  const backend = postgresJsBackend(sql, { commandTimeoutMs: 5_000 })
  let wakes = 0
  let connects = 0
  const errors: unknown[] = []
  const sub = await backend.listen!(outbox.channel, {
    onWake: () => wakes++,
    onError: (e) => errors.push(e),
    onConnect: () => connects++,
  })
  expect(connects).toBe(1)
  const notify = () => inspector.query(`SELECT pg_notify($1, '')`, [outbox.channel])
  await notify()
  await waitFor(() => wakes > 0, { what: 'a first wake-up' })
  const cut = await inspector.query(
    `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE query = $1`,
    [`listen "${outbox.channel}"`],
  )
  expect(cut).toHaveLength(1)
  await waitFor(() => connects === 2, { what: 'the re-LISTEN' })
  expect(errors).toHaveLength(1)
  expect(String((errors[0] as Error).message)).toMatch(/was cut/)
  const before = wakes
  await notify()
  await waitFor(() => wakes > before, { what: 'a wake-up after the reconnection' })
  await sub.close()
  const closedAt = wakes
  await notify()
  // A NOTIFY sent after close must not wake: wait until a fresh listener saw this one and the next.
  let probe = 0
  const witness = await sql.listen(outbox.channel, () => probe++)
  await notify()
  await waitFor(() => probe > 0, { what: 'the witness listener' })
  expect(wakes).toBe(closedAt)
  await witness.unlisten()
})

test('migrate prints no NOTICE, even on a sql without onnotice', async () => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => {})
  const quiet = postgres(testDatabaseUrl(), { max: 1 })
  try {
    await migrate(outbox, postgresJsBackend(quiet))
    await migrate(outbox, postgresJsBackend(quiet))
    const notices = log.mock.calls.filter((c) => JSON.stringify(c).includes('skipping'))
    expect(notices).toEqual([])
    // SET LOCAL lasted only for the script: the session keeps its own level.
    expect((await quiet`SELECT current_setting('client_min_messages') AS v`)[0]!.v).toBe('notice')
  } finally {
    log.mockRestore()
    await quiet.end()
  }
})

test('an unknown option is refused with INVALID_CONFIG, naming it and the closest valid one', async () => {
  const refusal = (fn: () => unknown) => invalidConfigMessage('postgres-js', fn)
  const onSql = refusal(() => postgresJsBackend(sql, { comandTimeoutMs: 5_000 } as never))
  expect(onSql).toContain('unknown option "comandTimeoutMs" for postgresJsBackend(sql, options)')
  expect(onSql).toContain('(did you mean "commandTimeoutMs"?)')
  expect(onSql).toContain('Valid options: commandTimeoutMs, listen, listenProbeTimeoutMs.')
  // postgres.js options belong to postgres(), not to the backend on your own sql.
  expect(refusal(() => postgresJsBackend(sql, { max: 2 } as never))).toContain('unknown option "max"')
  const owned = refusal(() => postgresJsBackend({ url: testDatabaseUrl(), commandTimeout: 5_000 } as never))
  expect(owned).toContain('unknown option "commandTimeout" for postgresJsBackend({ url })')
  expect(owned).toContain('(did you mean "commandTimeoutMs"?)')
  expect(refusal(() => postgresJsBackend({ url: testDatabaseUrl(), idle_timout: 1 } as never))).toContain(
    '(did you mean "idle_timeout"?)',
  )
  // An option of node-postgres, not of postgres.js: nothing close, the valid names are listed.
  const other = refusal(() =>
    postgresJsBackend({ url: testDatabaseUrl(), connectionTimeoutMillis: 1 } as never),
  )
  expect(other).toContain('unknown option "connectionTimeoutMillis"')
  expect(other).not.toContain('did you mean')
  expect(other).toContain('connect_timeout')
  // listen must be a root sql; listenProbeTimeoutMs a positive number of ms.
  for (const listen of [testDatabaseUrl(), {}, null]) {
    expect(refusal(() => postgresJsBackend(sql, { listen } as never))).toContain(
      'listen must be the root sql of postgres(...)',
    )
  }
  expect(refusal(() => postgresJsBackend(sql, { listenProbeTimeoutMs: 0 }))).toContain(
    'listenProbeTimeoutMs must be a finite number of milliseconds > 0',
  )
  // postgres() options and outboxkit's own pass.
  await postgresJsBackend({
    url: testDatabaseUrl(),
    max: 1,
    idle_timeout: 1,
    commandTimeoutMs: 5_000,
    listen: sql,
    listenProbeTimeoutMs: 1_000,
  }).close()
  await postgresJsBackend(sql, { listen: sql, listenProbeTimeoutMs: 1_000 }).close()
})
