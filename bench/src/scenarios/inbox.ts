import { randomUUID } from 'node:crypto'
import { defineInbox, migrate } from '@outboxkit/core'
import { pgBackend, processOnce } from '@outboxkit/pg'
import pg from 'pg'
import { median, round } from '../stats.js'

// Scenario 10: the cost of the inbox in a consumer's transaction. 16 concurrent consumers each
// run, back to back, the transaction a handler runs, once without the inbox and once through
// processOnce (its INSERT ... ON CONFLICT DO NOTHING first): 'minimal' is BEGIN, one business
// INSERT, COMMIT (three round trips, the worst case for the inbox's fourth); 'typical' reads the
// order, inserts the invoice and marks the order (five round trips). The two variants alternate
// within each round (same machine load); the figure is the ratio of their rates, side by side.

/** Options of scenario 10. */
export interface InboxOptions {
  consumers: number
  durationMs: number
  warmupMs: number
  rounds: number
}

/** The handler's work. */
export type InboxWork = 'minimal' | 'typical'

/** One variant's run in one round. */
export interface InboxRun {
  transactions: number
  perSecond: number
}

/** Scenario 10's result in latest.json. */
export interface InboxResult {
  work: InboxWork
  consumers: number
  durationMs: number
  rounds: { plain: InboxRun; inbox: InboxRun; ratio: number }[]
  /** Median over the rounds of (with processOnce) / (without), each round measured side by side. */
  ratio: number
  plainMedianPerSecond: number
  inboxMedianPerSecond: number
}

const BUSINESS = 'bench_inbox_invoices'
const ORDERS = 'bench_inbox_orders'
const ORDER_COUNT = 10_000
const INBOX = 'bench_inbox'

async function runVariant(
  pool: pg.Pool,
  withInbox: boolean,
  work: InboxWork,
  opts: InboxOptions,
  ms: number,
): Promise<InboxRun> {
  const inbox = defineInbox({ table: INBOX, consumer: 'bench' })
  const stopAt = Date.now() + ms
  let transactions = 0
  const consumer = async () => {
    const client = await pool.connect()
    try {
      while (Date.now() < stopAt) {
        const id = randomUUID()
        await client.query('BEGIN')
        const order = 1 + Math.floor(Math.random() * ORDER_COUNT)
        const handler = async () => {
          let amount = 42.5
          if (work === 'typical') {
            const { rows } = await client.query(`SELECT amount FROM ${ORDERS} WHERE id = $1`, [order])
            amount = Number(rows[0].amount)
          }
          await client.query(`INSERT INTO ${BUSINESS} (message_id, amount) VALUES ($1, $2)`, [id, amount])
          if (work === 'typical')
            await client.query(`UPDATE ${ORDERS} SET invoiced = invoiced + 1 WHERE id = $1`, [order])
        }
        if (withInbox) await processOnce(inbox, client, { id }, handler)
        else await handler()
        await client.query('COMMIT')
        transactions++
      }
    } finally {
      client.release()
    }
  }
  const t0 = Date.now()
  await Promise.all(Array.from({ length: opts.consumers }, consumer))
  const seconds = (Date.now() - t0) / 1000
  return { transactions, perSecond: round(transactions / seconds, 0) }
}

/** Runs scenario 10 on the bench database. */
export async function runInboxScenario(
  url: string,
  work: InboxWork,
  opts: InboxOptions,
  log: (line: string) => void,
): Promise<InboxResult> {
  const pool = new pg.Pool({ connectionString: url, max: opts.consumers + 2 })
  try {
    await pool.query(`DROP TABLE IF EXISTS ${BUSINESS}, ${INBOX}, ${ORDERS}`)
    await pool.query(
      `CREATE TABLE ${ORDERS} AS SELECT g AS id, 42.5::numeric(12,2) AS amount, 0 AS invoiced FROM generate_series(1, ${ORDER_COUNT}) g`,
    )
    await pool.query(`ALTER TABLE ${ORDERS} ADD PRIMARY KEY (id)`)
    await pool.query(
      `CREATE TABLE ${BUSINESS} (id bigserial PRIMARY KEY, message_id uuid NOT NULL, amount numeric(12,2) NOT NULL)`,
    )
    await migrate(defineInbox({ table: INBOX, consumer: 'bench' }), pgBackend({ pool }))
    await runVariant(pool, true, work, opts, opts.warmupMs)
    await runVariant(pool, false, work, opts, opts.warmupMs)
    const rounds: InboxResult['rounds'] = []
    for (let r = 0; r < opts.rounds; r++) {
      // Alternate which variant goes first, so neither always runs on the warmer table.
      const first = r % 2 === 0
      const a = await runVariant(pool, first, work, opts, opts.durationMs)
      const b = await runVariant(pool, !first, work, opts, opts.durationMs)
      const [inbox, plain] = first ? [a, b] : [b, a]
      const ratio = round(inbox.perSecond / plain.perSecond, 2)
      rounds.push({ plain, inbox, ratio })
      log(
        `  ${work} round ${r + 1}: without inbox ${plain.perSecond} tx/s, with processOnce ${inbox.perSecond} tx/s: ${ratio}x`,
      )
    }
    const result: InboxResult = {
      work,
      consumers: opts.consumers,
      durationMs: opts.durationMs,
      rounds,
      ratio: median(rounds.map((r) => r.ratio)),
      plainMedianPerSecond: median(rounds.map((r) => r.plain.perSecond)),
      inboxMedianPerSecond: median(rounds.map((r) => r.inbox.perSecond)),
    }
    log(`  ${work}: median ratio (with / without processOnce): ${result.ratio}x`)
    return result
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${BUSINESS}, ${INBOX}, ${ORDERS}`).catch(() => {})
    await pool.end()
  }
}
