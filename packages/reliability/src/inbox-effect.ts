import { defineInbox, type Inbox } from '@outboxkit/core'
import { randomInt } from './database.js'
import type { LedgerDriver } from './ledger-db.js'

/** The inbox mode of a relay worker: its `work` handler writes a business row through `processOnce`. */
export interface InboxEffectConfig {
  /** The inbox table (migrated by the test). */
  readonly table: string
  /** The business table: `(message_id, pid)`, no unique key, so a doubled effect shows as two rows. */
  readonly business: string
  /** The handler sleeps a random time in this range (ms) inside the business transaction, before COMMIT. */
  readonly inTransactionMs: readonly [number, number]
}

/** The consumer name of the crash runs. */
export const INBOX_CONSUMER = 'crash-test'

/** The inbox of a run. */
export function runInbox(config: Pick<InboxEffectConfig, 'table'>): Inbox {
  return defineInbox({ table: config.table, consumer: INBOX_CONSUMER })
}

/** The DDL of the business table (`message_id`, `pid`; no key on `message_id`). */
export function businessTableSql(business: string): string {
  return `CREATE TABLE ${business} (message_id VARCHAR(64) NOT NULL, pid INTEGER NOT NULL)`
}

const sleep = (range: readonly [number, number]) =>
  new Promise((r) => setTimeout(r, randomInt(range[0], range[1])))

/**
 * The business side effect of a delivery, run the way a user's handler would: open a transaction
 * on the database handle, `processOnce` (which inserts the inbox row), write the business row,
 * sleep (so a SIGKILL lands inside the open transaction), COMMIT. Resolves whether it ran.
 */
export async function inboxEffect(
  driver: LedgerDriver,
  config: InboxEffectConfig,
  message: { id: string },
  pid: number,
): Promise<boolean> {
  const inbox = runInbox(config)
  const insert = `INSERT INTO ${config.business} (message_id, pid) VALUES`
  if (driver.dialect === 'postgres') {
    const { processOnce } = await import('@outboxkit/pg')
    const client = await driver.pool.connect()
    try {
      await client.query('BEGIN')
      const r = await processOnce(inbox, client, message, async () => {
        await client.query(`${insert} ($1, $2)`, [message.id, pid])
        await sleep(config.inTransactionMs)
      })
      await client.query('COMMIT')
      return r.processed
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      client.release()
    }
  }
  if (driver.dialect === 'mysql') {
    const { processOnce } = await import('@outboxkit/mysql')
    const conn = await driver.pool.getConnection()
    try {
      await conn.beginTransaction()
      const r = await processOnce(inbox, conn, message, async () => {
        await conn.query(`${insert} (?, ?)`, [message.id, pid])
        await sleep(config.inTransactionMs)
      })
      await conn.commit()
      return r.processed
    } catch (err) {
      await conn.rollback().catch(() => {})
      throw err
    } finally {
      conn.release()
    }
  }
  throw new Error('[outboxkit] [reliability] the inbox crash run covers PostgreSQL and MariaDB/MySQL')
}
