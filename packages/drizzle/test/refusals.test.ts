import { PGlite } from '@electric-sql/pglite'
import {
  expectPublishRefused,
  recordingPgClient,
  serverInspector,
  testDatabaseUrl,
  useOutboxTable,
} from '@outboxkit/conformance'
import { defineOutbox, isOutboxError, migrate } from '@outboxkit/core'
import { POSTGRES_TRANSACTION_MARKER } from '@outboxkit/core/adapter'
import { type AnyDrizzleTransaction, type DrizzleTransaction, publish, publishMany } from '@outboxkit/drizzle'
import { pgBackend } from '@outboxkit/pg'
import { pgliteBackend } from '@outboxkit/pglite'
import { sql } from 'drizzle-orm'
import { drizzle as nodePgDrizzle } from 'drizzle-orm/node-postgres'
import { drizzle as pgliteDrizzle } from 'drizzle-orm/pglite'
import { drizzle as postgresJsDrizzle } from 'drizzle-orm/postgres-js'
import { drizzle as sqliteProxyDrizzle } from 'drizzle-orm/sqlite-proxy'
import pg from 'pg'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { publishOnKeptTxInsideAnother, publishTwoSavepointsDeep, REFUSAL_PREFIX } from './support/refusals.js'

// Every statement node-postgres and postgres.js are asked to send, so a test can assert publish sent nothing.
const sent: string[] = []
const RecordingClient = recordingPgClient(sent)

const url = testDatabaseUrl()
const inspector = serverInspector()
const pool = new pg.Pool({ connectionString: url, max: 10, Client: RecordingClient })
const db = nodePgDrizzle({ client: pool })
const pjs = postgres(url, { max: 4, onnotice: () => {}, debug: (_c, query) => void sent.push(query) })
const pjsDb = postgresJsDrizzle({ client: pjs })
const outbox = useOutboxTable('drizzle_refusals', { backend: () => pgBackend({ pool }) })
const table = outbox.table.name

const count = async (where = 'true', params: unknown[] = []) =>
  Number((await inspector.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, params))[0]!.n)

/** The pg client a node-postgres transaction runs on (private in Drizzle), to queue a COMMIT on it directly. */
const pgClientOf = (tx: DrizzleTransaction) => (tx._.session as unknown as { client: pg.ClientBase }).client

/**
 * Asserts publish and publishMany on `handle` fail with NOT_IN_TRANSACTION and write nothing, and
 * (unless `guarded`: postgres.js sends its guarded statement, which then writes nothing) that no
 * outbox statement was sent at all.
 */
async function expectRefused(handle: unknown, mentions: RegExp, { guarded = false } = {}): Promise<void> {
  const before = await count()
  sent.length = 0
  await expectPublishRefused({ publish, publishMany }, outbox, handle, {
    message: [REFUSAL_PREFIX, mentions, 'Nothing was written.'],
  })
  if (!guarded) expect(sent.filter((s) => s.includes(table))).toEqual([])
  expect(await count()).toBe(before)
}

/**
 * A tx and its nested tx, kept after `db`'s transaction committed; `inside` ran on the nested tx
 * before that (both as `[escaped, nested]`).
 */
async function keepTxAndNestedTx(
  db: { transaction<T>(fn: (tx: DrizzleTransaction) => Promise<T>): Promise<T> },
  inside: (nested: DrizzleTransaction) => Promise<unknown>,
): Promise<[escaped: DrizzleTransaction, nested: DrizzleTransaction]> {
  let nested: DrizzleTransaction | undefined
  const escaped = await db.transaction(async (tx) => {
    await tx.transaction(async (inner) => {
      nested = inner
      await inside(inner)
    })
    return tx
  })
  return [escaped, nested!]
}

afterAll(async () => {
  await inspector.close()
  await pool.end()
  await pjs.end()
})

describe('handles that never were a transaction', () => {
  test('the root db of node-postgres (Pool and single Client) and postgres.js', async () => {
    await expectRefused(
      db,
      /the Drizzle database itself \(NodePgDatabase\): it runs each query in autocommit/,
    )
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      await expectRefused(nodePgDrizzle({ client }), /the Drizzle database itself \(NodePgDatabase\)/)
      // Even inside a BEGIN the user ran by hand: Drizzle's brand check says it is not a transaction.
      await client.query('BEGIN')
      await expectRefused(nodePgDrizzle({ client }), /the Drizzle database itself/)
      await client.query('ROLLBACK')
    } finally {
      await client.end()
    }
    await expectRefused(pjsDb, /the Drizzle database itself \(PostgresJsDatabase\)/)
    // And at compile time: the root db is not a PgTransaction.
    const compileTimeCheck = () =>
      // @ts-expect-error the root db is not a transaction
      publish(outbox, db, { topic: 'refused', payload: 1 })
    expect(typeof compileTimeCheck).toBe('function')
  })

  test('a Drizzle transaction of another dialect', async () => {
    const sqlite = sqliteProxyDrizzle(async () => ({ rows: [] }))
    await sqlite.transaction(async (tx) => {
      await expectRefused(tx, /a Drizzle SQLiteProxyTransaction \(not a PostgreSQL transaction/)
    })
  })

  test('driver handles and things that are not Drizzle at all', async () => {
    await expectRefused(pool, /a BoundPool instance/)
    await expectRefused(pjs, /got function/)
    await expectRefused(null, /got null, which is not a Drizzle transaction/)
    await expectRefused({ execute: () => {}, transaction: () => {} }, /a plain object/)
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await expectRefused(client, /a RecordingClient instance/)
    } finally {
      await client.query('ROLLBACK')
      client.release()
    }
  })
})

describe('node-postgres: transactions that ended or failed', () => {
  test('a tx and a nested tx kept after the transaction committed', async () => {
    let escaped: DrizzleTransaction | undefined
    let nested: DrizzleTransaction | undefined
    await db.transaction(async (tx) => {
      escaped = tx
      await publish(outbox, tx, { topic: 'inside', payload: 1 })
      await tx.transaction(async (inner) => {
        nested = inner
      })
    })
    expect(await count(`topic = 'inside'`)).toBe(1)
    await expectRefused(escaped, /already committed or rolled back/)
    await expectRefused(nested, /already committed or rolled back/)
  })

  test('a tx kept after tx.rollback()', async () => {
    let escaped: DrizzleTransaction | undefined
    await db
      .transaction(async (tx) => {
        escaped = tx
        await publish(outbox, tx, { topic: 'rolled-back', payload: 1 })
        tx.rollback()
      })
      .catch(() => {})
    await expectRefused(escaped, /already committed or rolled back/)
    expect(await count(`topic = 'rolled-back'`)).toBe(0)
  })

  test('a tx on a single pg.Client, kept after its transaction', async () => {
    const client = new RecordingClient({ connectionString: url })
    await client.connect()
    try {
      let escaped: DrizzleTransaction | undefined
      await nodePgDrizzle({ client }).transaction(async (tx) => {
        escaped = tx
      })
      await expectRefused(escaped, /already committed or rolled back/)
    } finally {
      await client.end()
    }
  })

  test('a failed transaction (a statement raised an error) is refused inside its own callback', async () => {
    await db
      .transaction(async (tx) => {
        await tx.execute(sql`SELECT 1/0`).catch(() => {})
        await expectRefused(tx, /a Drizzle transaction that failed/)
      })
      .catch(() => {})
  })

  test('a COMMIT queued before the publish statement: refused when pg would send it, nothing written', async () => {
    await db.transaction(async (tx) => {
      // COMMIT is queued on the connection (Drizzle's own tx.execute() would only start when awaited):
      // the status still reads 'T' when publish is called, and 'I' when pg would send the statement.
      const commit = pgClientOf(tx).query('COMMIT')
      const err = await publish(outbox, tx, { topic: 'racing-commit', payload: 1 }).catch((e: unknown) => e)
      await commit
      expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
      expect((err as Error).message).toMatch(/already committed or rolled back/)
    })
    // Had pg sent it after the COMMIT, it would have committed on its own in autocommit.
    expect(await count(`topic = 'racing-commit'`)).toBe(0)
  })

  test('a pipelined pg client (pipeline: true): refused while a COMMIT is in flight', async () => {
    const client = new pg.Client({ connectionString: url, pipeline: true } as pg.ClientConfig)
    await client.connect()
    try {
      const pdb = nodePgDrizzle({ client })
      const ok = await pdb.transaction((tx) => publish(outbox, tx, { topic: 'pipelined', payload: 1 }))
      expect(ok.published).toBe(true)
      await pdb.transaction(async (tx) => {
        const commit = pgClientOf(tx).query('COMMIT')
        const err = await publish(outbox, tx, { topic: 'pipelined-race', payload: 1 }).catch(
          (e: unknown) => e,
        )
        await commit
        expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
        expect((err as Error).message).toMatch(/still has queries in flight|already committed/)
      })
      let escaped: DrizzleTransaction | undefined
      await pdb.transaction(async (tx) => {
        escaped = tx
      })
      const err = await publish(outbox, escaped!, { topic: 'pipelined-race', payload: 1 }).catch(
        (e: unknown) => e,
      )
      expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
    } finally {
      await client.end()
    }
    expect(await count(`topic = 'pipelined'`)).toBe(1)
    expect(await count(`topic = 'pipelined-race'`)).toBe(0)
  })

  test('a pg client without getTransactionStatus() (pg older than 8.21) is refused with what to do', async () => {
    class OldClient extends pg.Client {
      constructor(config: pg.ClientConfig) {
        super(config)
        // What pg 8.20 and older look like: no getTransactionStatus.
        Object.defineProperty(this, 'getTransactionStatus', { value: undefined })
      }
    }
    const oldPool = new pg.Pool({ connectionString: url, max: 1, Client: OldClient as typeof pg.Client })
    try {
      await nodePgDrizzle({ client: oldPool }).transaction(async (tx) => {
        await expectRefused(tx, /without getTransactionStatus\(\) .*upgrade pg to >= 8\.21/)
      })
    } finally {
      await oldPool.end()
    }
  })
})

describe('postgres.js: transactions that ended or failed (the guarded statement)', () => {
  test('a tx and a nested tx kept after commit, and a tx kept after rollback', async () => {
    const [escaped, nested] = await keepTxAndNestedTx(pjsDb, (inner) =>
      publish(outbox, inner, { topic: 'pjs-inside', payload: 1 }),
    )
    expect(await count(`topic = 'pjs-inside'`)).toBe(1)
    await expectRefused(
      escaped,
      /already committed or rolled back \(postgres\.js would run the statement in autocommit\)/,
      { guarded: true },
    )
    await expectRefused(nested, /already committed or rolled back/, { guarded: true })
    let rolledBack: DrizzleTransaction | undefined
    await pjsDb
      .transaction(async (tx) => {
        rolledBack = tx
        tx.rollback()
      })
      .catch(() => {})
    await expectRefused(rolledBack, /already committed or rolled back/, { guarded: true })
  })

  test('a COMMIT queued before the publish statements: refused, nothing written', async () => {
    await pjsDb.transaction(async (tx) => {
      // Queued on the transaction's connection before publish's marker and statement.
      const commit = (tx._.session as unknown as { client: postgres.TransactionSql }).client
        .unsafe('COMMIT')
        .execute()
      const err = await publish(outbox, tx, { topic: 'pjs-racing-commit', payload: 1 }).catch(
        (e: unknown) => e,
      )
      await commit
      expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
    })
    expect(await count(`topic = 'pjs-racing-commit'`)).toBe(0)
  })

  test('a failed transaction is refused inside its own callback', async () => {
    await pjsDb
      .transaction(async (tx) => {
        await tx.execute(sql`SELECT 1/0`).catch(() => {})
        await expectRefused(tx, /a Drizzle transaction that failed/, { guarded: true })
      })
      .catch(() => {})
  })

  test('postgres.js options that change values or column names: fetch_types: false, transform: camel', async () => {
    for (const options of [{ fetch_types: false }, { transform: postgres.camel }, { prepare: false }]) {
      const label = JSON.stringify(options)
      const client = postgres(url, { max: 2, onnotice: () => {}, ...options })
      try {
        const odb = postgresJsDrizzle({ client })
        const dedupKey = `opts-${label}`
        const first = await odb.transaction((tx) =>
          publishMany(outbox, tx, [
            { topic: `opts-${label}`, payload: { q: 'a"b\\c,{}' }, key: 'k,{"}', dedupKey },
            { topic: `opts-${label}`, payload: [1, null], headers: { 'h"': 'v' } },
          ]),
        )
        const again = await odb.transaction((tx) =>
          publishMany(outbox, tx, [
            { topic: `opts-${label}`, payload: 3 },
            { topic: `opts-${label}`, payload: 4, dedupKey },
          ]),
        )
        expect(
          first.map((r) => r.published),
          label,
        ).toEqual([true, true])
        expect(again[1], label).toEqual({ id: first[0]!.id, published: false })
        const [row] = await inspector.query(`SELECT key, payload::text AS p FROM ${table} WHERE id = $1`, [
          first[0]!.id,
        ])
        expect(row, label).toEqual({ key: 'k,{"}', p: '{"q": "a\\"b\\\\c,{}"}' })
      } finally {
        await client.end()
      }
    }
  })
})

describe('PGlite', () => {
  let client: PGlite
  const liteOutbox = defineOutbox({ table: 'outbox' })
  const rows = async () =>
    (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox')).rows[0]!.n
  const expectLiteRefused = async (handle: unknown, mentions: RegExp) => {
    const before = await rows()
    await expectPublishRefused({ publish, publishMany }, liteOutbox, handle, {
      message: [REFUSAL_PREFIX, mentions],
    })
    expect(await rows()).toBe(before)
  }
  beforeAll(async () => {
    client = await PGlite.create()
    await migrate(liteOutbox, pgliteBackend(client))
  })
  afterAll(() => client?.close())

  test('the root db and the PGlite instance', async () => {
    await expectLiteRefused(pgliteDrizzle({ client }), /the Drizzle database itself \(PgliteDatabase\)/)
    await expectLiteRefused(client, /which is not a Drizzle transaction/)
  })

  test('a tx and a nested tx kept after commit, a tx kept after a rollback by throw', async () => {
    const ldb = pgliteDrizzle({ client })
    const [escaped, nested] = await keepTxAndNestedTx(ldb, (inner) =>
      publish(liteOutbox, inner, { topic: 'inside', payload: 1 }),
    )
    let thrown: DrizzleTransaction | undefined
    await ldb
      .transaction(async (tx) => {
        thrown = tx
        throw new Error('roll back')
      })
      .catch(() => {})
    expect(await rows()).toBe(1)
    for (const handle of [escaped, nested, thrown]) {
      await expectLiteRefused(handle, /already committed or rolled back/)
    }
  })
})

describe('what is accepted', () => {
  test('node-postgres: one statement on the transaction connection, seen by the Drizzle logger', async () => {
    const logged: string[] = []
    const ldb = nodePgDrizzle({ client: pool, logger: { logQuery: (q) => void logged.push(q) } })
    await ldb.transaction(async (tx) => {
      sent.length = 0
      await publishMany(outbox, tx, [
        { topic: 'round-trip', payload: 1 },
        { topic: 'round-trip', payload: 2 },
      ])
      expect(sent).toHaveLength(1)
      expect(sent[0]).toContain(table)
    })
    expect(logged.filter((q) => q.includes(table))).toHaveLength(1)
    expect(await count(`topic = 'round-trip'`)).toBe(2)
  })

  test('postgres.js: the marker and one statement on the transaction connection, seen by the Drizzle logger', async () => {
    const logged: string[] = []
    const ldb = postgresJsDrizzle({ client: pjs, logger: { logQuery: (q) => void logged.push(q) } })
    await ldb.transaction(async (tx) => {
      sent.length = 0
      await publish(outbox, tx, { topic: 'round-trip-pjs', payload: 1 })
      // The transaction marker, then the guarded statement (postgres.js pipelines the two).
      expect(sent).toHaveLength(2)
      expect(sent[0]).toBe(POSTGRES_TRANSACTION_MARKER)
      expect(sent[1]).toContain(table)
    })
    expect(logged.filter((q) => q.includes(table))).toHaveLength(1)
    expect(await count(`topic = 'round-trip-pjs'`)).toBe(1)
  })

  test('savepoints two levels deep, on both drivers: only the rolled-back level is gone', async () => {
    for (const [label, d] of [
      ['node-postgres', db],
      ['postgres-js', pjsDb],
    ] as const) {
      const ids = await publishTwoSavepointsDeep(d as typeof db, { publish }, outbox, `nested-${label}`)
      const kept = await inspector.query<{ id: string }>(
        `SELECT id::text AS id FROM ${table} WHERE topic = $1`,
        [`nested-${label}`],
      )
      expect(kept.map((r) => r.id).sort(), label).toEqual([ids[0], ids[1]].sort())
    }
  })
})

/**
 * The documented kept-tx hazard on a db over one connection (`end` closes it afterwards): the kept
 * tx publishes on `topic` inside another transaction, which rolls back, so nothing stays on `topic`.
 */
async function expectKeptTxWroteIntoAnother<TTx extends AnyDrizzleTransaction>(
  db: Parameters<typeof publishOnKeptTxInsideAnother<TTx>>[0],
  end: () => Promise<unknown>,
  topic: string,
): Promise<void> {
  try {
    await publishOnKeptTxInsideAnother(db, (kept) => publish(outbox, kept, { topic, payload: 1 }))
  } finally {
    await end()
  }
  expect(await count(`topic = '${topic}'`)).toBe(0)
}

describe('documented limits (these tests pin the hazards docs/adapters/drizzle.md describes)', () => {
  test('node-postgres: a kept tx whose pooled connection now serves another transaction writes into that one', async () => {
    const single = new pg.Pool({ connectionString: url, max: 1 })
    // The only connection is then inside B: the kept handle A reads status 'T' and cannot know.
    await expectKeptTxWroteIntoAnother(nodePgDrizzle({ client: single }), () => single.end(), 'joined-other')
  })

  test('postgres.js: a kept tx whose connection now serves another transaction writes into that one', async () => {
    const single = postgres(url, { max: 1, onnotice: () => {} })
    // The marker and the guarded statement both run inside B, so nothing can tell.
    await expectKeptTxWroteIntoAnother(
      postgresJsDrizzle({ client: single }),
      () => single.end(),
      'pjs-joined-other',
    )
  })
})
