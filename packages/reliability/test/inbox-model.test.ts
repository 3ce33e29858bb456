// The inbox against a model: fast-check generates interleavings of deliveries of a few message
// ids (duplicates), whose transactions commit, throw in the callback, or roll back after it, and
// pairs of concurrent deliveries of one id whose first commits or rolls back. Each runs through
// processOnce on the real server; after every step the result, the inbox rows and the business
// rows are checked against the model (a set of processed ids). Reproduce with INBOX_MODEL_SEED.
import { testDatabaseUrl, testMysqlUri, uniqueTableName } from '@outboxkit/conformance'
import { defineInbox, type Inbox, migrate } from '@outboxkit/core'
import { mysqlBackend, processOnce as mysqlProcessOnce } from '@outboxkit/mysql'
import { pgBackend, processOnce as pgProcessOnce } from '@outboxkit/pg'
import fc from 'fast-check'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { figuresLine } from '../src/report.js'

type End = 'commit' | 'throw' | 'rollbackAfter'
type Step = { kind: 'deliver'; id: number; end: End } | { kind: 'concurrent'; id: number; firstEnd: End }

/** One server: a transaction with processOnce and a business insert, and raw counts. */
interface Server {
  /** Delivers `id` in a transaction that ends as `end`; `hold` (optional) is awaited inside the callback. */
  deliver(id: string, end: End, hold?: Promise<void>, entered?: () => void): Promise<boolean | 'failed'>
  count(table: 'inbox' | 'business', id: string): Promise<number>
  reset(): Promise<void>
  close(): Promise<void>
}

class Boom extends Error {}

function pgServer(inbox: Inbox, business: string): Server {
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 })
  return {
    async deliver(id, end, hold, entered) {
      const c = await pool.connect()
      try {
        await c.query('BEGIN')
        const r = await pgProcessOnce(inbox, c, { id }, async () => {
          await c.query(`INSERT INTO ${business} (message_id) VALUES ($1)`, [id])
          entered?.()
          await hold
          if (end === 'throw') throw new Boom()
        })
        await c.query(end === 'rollbackAfter' ? 'ROLLBACK' : 'COMMIT')
        return r.processed
      } catch (e) {
        await c.query('ROLLBACK')
        if (e instanceof Boom) return 'failed'
        throw e
      } finally {
        c.release()
      }
    },
    async count(table, id) {
      const t = table === 'inbox' ? inbox.table.name : business
      return (await pool.query(`SELECT count(*)::int AS n FROM ${t} WHERE message_id = $1`, [id])).rows[0].n
    },
    async reset() {
      await pool.query(`CREATE TABLE IF NOT EXISTS ${business} (message_id text NOT NULL)`)
      await migrate(inbox, pgBackend({ pool }))
      await pool.query(`TRUNCATE ${business}, ${inbox.table.name}`)
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${business}, ${inbox.table.name}`)
      await pool.end()
    },
  }
}

function mysqlServer(inbox: Inbox, business: string): Server {
  const pool = mysql.createPool({ uri: testMysqlUri(), connectionLimit: 4 })
  return {
    async deliver(id, end, hold, entered) {
      const c = await pool.getConnection()
      try {
        await c.beginTransaction()
        const r = await mysqlProcessOnce(inbox, c, { id }, async () => {
          await c.query(`INSERT INTO ${business} (message_id) VALUES (?)`, [id])
          entered?.()
          await hold
          if (end === 'throw') throw new Boom()
        })
        await (end === 'rollbackAfter' ? c.rollback() : c.commit())
        return r.processed
      } catch (e) {
        await c.rollback()
        if (e instanceof Boom) return 'failed'
        throw e
      } finally {
        c.release()
      }
    },
    async count(table, id) {
      const t = table === 'inbox' ? inbox.table.name : business
      const [rows] = await pool.query(`SELECT count(*) AS n FROM ${t} WHERE message_id = ?`, [id])
      return Number((rows as { n: number }[])[0]!.n)
    },
    async reset() {
      await pool.query(`CREATE TABLE IF NOT EXISTS ${business} (message_id VARCHAR(64) NOT NULL)`)
      await migrate(inbox, mysqlBackend({ pool }))
      await pool.query(`DELETE FROM ${business}`)
      await pool.query(`DELETE FROM ${inbox.table.name}`)
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${business}, ${inbox.table.name}`)
      await pool.end()
    },
  }
}

const end = fc.constantFrom<End>('commit', 'throw', 'rollbackAfter')
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('deliver' as const), id: fc.integer({ min: 0, max: 3 }), end }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('concurrent' as const),
      id: fc.integer({ min: 0, max: 3 }),
      firstEnd: end,
    }),
  },
)

/** Runs `steps` on `server`, checking every step against the model. */
async function check(server: Server, run: string, steps: Step[]): Promise<void> {
  await server.reset()
  const processed = new Set<number>()
  const key = (id: number) => `${run}-${id}`
  for (const s of steps) {
    if (s.kind === 'deliver') {
      const got = await server.deliver(key(s.id), s.end)
      const first = !processed.has(s.id)
      expect(got, JSON.stringify(s)).toBe(first ? (s.end === 'throw' ? 'failed' : true) : false)
      if (first && s.end === 'commit') processed.add(s.id)
    } else {
      // The second delivery starts once the first is inside its callback (its inbox row written).
      let release!: () => void
      const hold = new Promise<void>((r) => {
        release = r
      })
      let entered!: () => void
      const inside = new Promise<void>((r) => {
        entered = r
      })
      const wasProcessed = processed.has(s.id)
      const first = server.deliver(key(s.id), s.firstEnd, hold, entered)
      if (!wasProcessed) await inside
      const second = server.deliver(key(s.id), 'commit')
      release()
      const [a, b] = await Promise.all([first, second])
      if (wasProcessed) expect([a, b], JSON.stringify(s)).toEqual([false, false])
      else {
        expect(a, JSON.stringify(s)).toBe(s.firstEnd === 'throw' ? 'failed' : true)
        expect(b, JSON.stringify(s)).toBe(s.firstEnd !== 'commit')
      }
      processed.add(s.id)
    }
    for (let id = 0; id <= 3; id++) {
      const want = processed.has(id) ? 1 : 0
      expect(await server.count('inbox', key(id)), `inbox row of ${id} after ${JSON.stringify(s)}`).toBe(want)
      expect(await server.count('business', key(id)), `effects of ${id} after ${JSON.stringify(s)}`).toBe(
        want,
      )
    }
  }
}

describe.each([
  ['postgres', pgServer],
  ['mysql', mysqlServer],
] as const)('%s', (dialect, make) => {
  let server: Server
  beforeAll(() => {
    const table = uniqueTableName(`inbox_model_${dialect}`)
    server = make(defineInbox({ table, consumer: 'model' }), `${table}_business`)
  })
  afterAll(() => server?.close())

  test('interleaved duplicate deliveries, rollbacks and concurrent pairs follow the model', async () => {
    let runs = 0
    let steps = 0
    const seed = process.env.INBOX_MODEL_SEED === undefined ? undefined : Number(process.env.INBOX_MODEL_SEED)
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (s) => {
        runs++
        steps += s.length
        await check(server, `r${runs}`, s)
      }),
      { numRuns: Number(process.env.INBOX_MODEL_RUNS ?? 30), ...(seed === undefined ? {} : { seed }) },
    )
    console.log(figuresLine(`inbox-model-${dialect}`, { runs, steps }))
  }, 120_000)
})
