import { defineInbox, type Inbox, migrate, type ProcessOnceFn } from '@outboxkit/core'
import { afterAll, beforeAll } from 'vitest'
import type { OutboxDialect } from '../dialect-sql.js'
import type { PublishSuite } from '../publish-suite/suite.js'

/** What every group of inbox tests is given: the opened publish suite, processOnce, raw SQL on the inbox. */
export interface InboxSuite<TTx> {
  /** The adapter name as it appears in error messages. */
  name: string
  processOnce: ProcessOnceFn<TTx>
  /** The publish suite whose context (transactions, refused handles, inspector) the inbox tests reuse. */
  suite: PublishSuite<TTx>
  /** The inbox of consumer `'billing'` on the suite's inbox table (filled in by `beforeAll`). */
  inbox(): Inbox
  /** Another consumer on the same table. */
  other(): Inbox
  /** Rows of the inbox table for `(consumer, id)`, raw SQL; without `id`, every row of the consumer. */
  rows(consumer: string, id?: string): Promise<number>
}

/** `$1, $2` (PostgreSQL) or `?, ?`. */
function marks(dialect: OutboxDialect, n: number): string[] {
  return Array.from({ length: n }, (_, i) => (dialect === 'postgres' ? `$${i + 1}` : '?'))
}

/** Registers the inbox table's `beforeAll` (a fresh table, migrate) and `afterAll` (drop) on the opened publish suite. */
export function openInboxSuite<TTx>(
  suite: PublishSuite<TTx>,
  processOnce: ProcessOnceFn<TTx>,
): InboxSuite<TTx> {
  let inbox: Inbox | undefined
  let other: Inbox | undefined
  beforeAll(async () => {
    const table = `${suite.opened.table}_inbox`
    inbox = defineInbox({ table, consumer: 'billing' })
    other = defineInbox({ table, consumer: 'shipping' })
    await migrate(inbox, suite.opened.ctx.backend)
  })
  afterAll(async () => {
    if (inbox) await suite.opened.ctx.inspect(`DROP TABLE IF EXISTS ${inbox.table.name}`).catch(() => {})
  })
  const dialect = () => suite.opened.ctx.dialect ?? 'postgres'
  return {
    name: suite.name,
    processOnce,
    suite,
    inbox: () => inbox!,
    other: () => other!,
    async rows(consumer, id) {
      const [a, b] = marks(dialect(), 2)
      const text = `SELECT count(*) AS n FROM ${inbox!.table.name} WHERE consumer = ${a}${id === undefined ? '' : ` AND message_id = ${b}`}`
      const rows = await suite.opened.ctx.inspect(text, id === undefined ? [consumer] : [consumer, id])
      return Number(rows[0]?.n ?? 0)
    },
  }
}
