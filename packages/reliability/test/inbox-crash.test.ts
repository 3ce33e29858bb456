// The inbox under SIGKILL: relay processes whose handlers write a business row through
// processOnce (in a transaction of their own, on the user's database handle) are killed while
// inside handlers, some inside the open business transaction, some after its COMMIT and before
// the relay settled. The ledger shows the redeliveries; the business table holds each committed
// message's effect exactly once. PostgreSQL and MariaDB/MySQL. Not SQLite: a relay process whose
// handler holds a write transaction across awaits stalls its own other connections, which wait
// for the lock synchronously (see docs/inbox.md, "On SQLite").
import { DIALECTS } from '@outboxkit/conformance'
import { migrate, type OutboxDialect } from '@outboxkit/core'
import { afterEach, describe, expect, test } from 'vitest'
import { businessTableSql, type InboxEffectConfig, runInbox } from '../src/inbox-effect.js'
import { ledgerSql } from '../src/ledger-sql.js'
import { produce } from '../src/producer.js'
import { figuresLine } from '../src/report.js'
import { type FleetFixture, fleetFixture } from './support/fleet-fixture.js'
import { killInHandlersThenDrain } from './support/kill-in-handler.js'

let fixture: FleetFixture | undefined
const dropAfter: string[] = []
afterEach(async () => {
  for (const t of dropAfter.splice(0)) await fixture?.db.execute(`DROP TABLE IF EXISTS ${t}`).catch(() => {})
  await fixture?.close()
  fixture = undefined
})

async function killWhileProcessingOnce(dialect: OutboxDialect): Promise<void> {
  const t0 = Date.now()
  const name = `inbox_${process.pid}_${dialect.slice(0, 2)}`
  const inbox: InboxEffectConfig = {
    table: `okrel_${name}_inbox`,
    business: `okrel_${name}_business`,
    inTransactionMs: [20, 60],
  }
  const f = await fleetFixture(dialect, 'inbox_kill', { handler: { sleepMs: [20, 60] }, inbox })
  fixture = f
  dropAfter.push(inbox.table, inbox.business)
  for (const t of [inbox.table, inbox.business]) await f.db.execute(`DROP TABLE IF EXISTS ${t}`)
  await f.db.execute(businessTableSql(inbox.business))
  await migrate(runInbox(inbox), f.db.backend())
  const producer = await produce({
    db: f.producerDb,
    outbox: f.outbox,
    tables: f.tables,
    producers: 2,
    rollbackRate: 0.2,
    maxBatch: 10,
    keepGoing: (s) => s.committedMessages + s.rolledBackMessages < 600,
  })
  await f.fleet.spawnMany(3)
  await killInHandlersThenDrain(f, dialect, { kills: 6, drainTimeoutMs: 120_000 })
  await f.fleet.stop()
  const { t } = ledgerSql(dialect, f.tables)
  const pid = dialect === 'postgres' ? 'p.id::text' : 'p.id'
  const q = async (sql: string) => Number((await f.db.query<{ n: number }>(sql))[0]!.n)
  const committed = await q(`SELECT count(*) AS n FROM ${t.produced}`)
  const figures = {
    committed,
    rolledBack: producer.rolledBackMessages,
    kills: f.fleet.deaths.filter((d) => d.cause === 'killed').length,
    // Handler calls beyond the first per message: the relay redelivered them.
    redeliveries:
      (await q(`SELECT count(*) AS n FROM ${t.ledger}`)) -
      (await q(`SELECT count(DISTINCT id) AS n FROM ${t.ledger}`)),
    // Redeliveries of messages whose business transaction had committed: processOnce skipped them.
    businessRows: await q(`SELECT count(*) AS n FROM ${inbox.business}`),
    missing: await q(
      `SELECT count(*) AS n FROM ${t.produced} p WHERE NOT EXISTS (SELECT 1 FROM ${inbox.business} b WHERE b.message_id = ${pid})`,
    ),
    doubled: await q(
      `SELECT count(*) AS n FROM (SELECT message_id FROM ${inbox.business} GROUP BY message_id HAVING count(*) > 1) d`,
    ),
    phantom: await q(
      `SELECT count(*) AS n FROM ${inbox.business} b WHERE NOT EXISTS (SELECT 1 FROM ${t.produced} p WHERE ${pid} = b.message_id)`,
    ),
    inboxRows: await q(`SELECT count(*) AS n FROM ${inbox.table}`),
    seconds: ((Date.now() - t0) / 1000).toFixed(1),
  }
  console.log(figuresLine(`inbox-sigkill-${dialect}`, figures))
  expect(committed).toBe(producer.committedMessages)
  expect(figures.kills).toBeGreaterThanOrEqual(3)
  expect(figures.redeliveries).toBeGreaterThan(0) // the kills did cause redeliveries...
  expect(figures.missing).toBe(0) // ...yet every committed message has its effect
  expect(figures.doubled).toBe(0) // exactly once
  expect(figures.phantom).toBe(0) // and no effect of a rolled-back message
  expect(figures.businessRows).toBe(committed)
  expect(figures.inboxRows).toBe(committed)
}

describe.each(DIALECTS.filter((d) => d !== 'sqlite'))('%s', (dialect) => {
  test(
    'relays SIGKILLed while handlers write business rows through processOnce: redeliveries, 0 missing, 0 doubled',
    () => killWhileProcessingOnce(dialect),
    240_000,
  )
})
