// The inbox's admin side on every database of the matrix: migrate (idempotent), inboxDdl, purge
// (batched, per consumer, by age) and inboxStats, asserted through raw SQL.
import { DIALECTS, uniqueTableName } from '@outboxkit/conformance'
import {
  defineInbox,
  defineOutbox,
  INBOX_DEFAULT_RETENTION_MS,
  type Inbox,
  inboxDdl,
  inboxStats,
  isOutboxError,
  migrate,
  purge,
} from '@outboxkit/core'
import { SQLITE_NOW_MS } from '@outboxkit/core/adapter'
import { describe, expect, test } from 'vitest'
import { useHarness } from './support/harness.js'

const DAY = 24 * 60 * 60 * 1000

describe.each(DIALECTS)('%s', (dialect) => {
  const h = useHarness(dialect)
  const p = (i: number) => (dialect === 'postgres' ? `$${i}` : '?')
  const agoSql =
    dialect === 'postgres'
      ? `now() - ${p(3)}::float8 * interval '1 millisecond'`
      : dialect === 'mysql'
        ? `DATE_SUB(UTC_TIMESTAMP(6), INTERVAL ${p(3)} * 1000 MICROSECOND)`
        : `${SQLITE_NOW_MS} - ${p(3)}`
  const tables: string[] = []

  async function freshInbox(consumer = 'billing'): Promise<Inbox> {
    const table = uniqueTableName('inbox_admin')
    tables.push(table)
    const inbox = defineInbox({ table, consumer })
    await migrate(inbox, await h.sharedBackend())
    return inbox
  }
  /** Seeds `n` rows of `consumer` processed `agoMs` ago. */
  async function seed(inbox: Inbox, consumer: string, n: number, agoMs: number, prefix: string) {
    for (let i = 0; i < n; i++) {
      await h.query(
        `INSERT INTO ${inbox.table.name} (consumer, message_id, processed_at) VALUES (${p(1)}, ${p(2)}, ${agoSql})`,
        [consumer, `${prefix}-${i}`, agoMs],
      )
    }
  }
  const count = async (inbox: Inbox, consumer: string) =>
    Number(
      (
        await h.query(`SELECT count(*) AS n FROM ${inbox.table.name} WHERE consumer = ${p(1)}`, [consumer])
      )[0]!.n,
    )

  test('migrate(inbox) is idempotent and creates the columns and the purge index', async () => {
    const inbox = await freshInbox()
    await migrate(inbox, await h.sharedBackend())
    await Promise.all([migrate(inbox, h.backend()), migrate(inbox, h.backend())])
    await seed(inbox, 'billing', 1, 0, 'm')
    const rows = await h.query(`SELECT consumer, message_id, processed_at FROM ${inbox.table.name}`)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ consumer: 'billing', message_id: 'm-0' })
    // The primary key is (consumer, message_id): a second row with the same pair is refused.
    await expect(seed(inbox, 'billing', 1, 0, 'm')).rejects.toThrow()
    await seed(inbox, 'shipping', 1, 0, 'm')
  })

  test('inboxDdl is what migrate runs: it creates a working table, and runs twice', async () => {
    const table = uniqueTableName('inbox_ddl')
    tables.push(table)
    const inbox = defineInbox({ table })
    const ddl = inboxDdl(inbox, dialect)
    for (let i = 0; i < 2; i++)
      for (const statement of ddl.split(';\n').filter((s) => s.trim())) await h.query(statement)
    await seed(inbox, 'default', 2, 0, 'd')
    expect(await count(inbox, 'default')).toBe(2)
  })

  test('purge deletes only this consumer rows older than olderThanMs, in batches', async () => {
    const inbox = await freshInbox('billing')
    await seed(inbox, 'billing', 25, 2 * DAY, 'old')
    await seed(inbox, 'billing', 3, 1000, 'new')
    await seed(inbox, 'shipping', 4, 2 * DAY, 'other')
    const backend = await h.sharedBackend()
    let batches = 0
    const counting = {
      ...backend,
      purgeInbox: (req: Parameters<NonNullable<typeof backend.purgeInbox>>[0]) => {
        batches++
        expect(req.limit).toBe(10)
        return backend.purgeInbox!(req)
      },
    }
    expect(await purge(inbox, counting, { olderThanMs: DAY, batchSize: 10 })).toBe(25)
    expect(batches).toBe(3) // 10 + 10 + 5: the last batch deleted fewer than asked
    expect(await count(inbox, 'billing')).toBe(3)
    expect(await count(inbox, 'shipping')).toBe(4)
    // The default window keeps 7 days.
    await seed(inbox, 'billing', 2, INBOX_DEFAULT_RETENTION_MS + DAY, 'older')
    expect(await purge(inbox, backend)).toBe(2)
    expect(await count(inbox, 'billing')).toBe(3)
  })

  test('inboxStats counts one consumer and the age of its oldest row', async () => {
    const inbox = await freshInbox('billing')
    const backend = await h.sharedBackend()
    expect(await inboxStats(inbox, backend)).toEqual({ consumer: 'billing', count: 0, oldestAgeMs: null })
    await seed(inbox, 'billing', 3, 60_000, 'a')
    await seed(inbox, 'shipping', 5, 10 * 60_000, 'b')
    const stats = await inboxStats(inbox, backend)
    expect(stats.count).toBe(3)
    expect(stats.oldestAgeMs).toBeGreaterThanOrEqual(59_000)
    expect(stats.oldestAgeMs).toBeLessThan(10 * 60_000)
  })

  test('purge(inbox) refuses bad options before any statement', async () => {
    const inbox = await freshInbox()
    const backend = await h.sharedBackend()
    for (const options of [{ olderThanMs: -1 }, { batchSize: 0 }, { batchSize: 1.5 }, { olderThan: 5 }]) {
      const err = await purge(inbox, backend, options as never).catch((e: unknown) => e)
      expect(isOutboxError(err, 'INVALID_CONFIG'), String(err)).toBe(true)
    }
    expect(() => inboxDdl(defineOutbox() as never)).toThrow(/defineInbox/)
  })

  // Drop this dialect's tables when its block ends.
  test('drops its tables', async () => {
    for (const table of tables.splice(0)) await h.query(`DROP TABLE IF EXISTS ${table}`)
  })
})

describe('defineInbox', () => {
  test('defaults, validation and the brand', () => {
    const inbox = defineInbox()
    expect(inbox).toMatchObject({ kind: 'outboxkit.inbox', consumer: 'default', table: { name: 'inbox' } })
    expect(defineInbox({ table: 'app.inbox', consumer: 'billing' }).table).toMatchObject({
      schema: 'app',
      name: 'inbox',
    })
    for (const bad of [
      { table: 'x; drop' },
      { consumer: '' },
      { consumer: 'c'.repeat(256) },
      { consumer: 3 },
      { tabel: 'x' },
    ]) {
      expect(() => defineInbox(bad as never), JSON.stringify(bad)).toThrow(/\[outboxkit\] \[core\]/)
    }
  })
})
