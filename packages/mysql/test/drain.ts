/**
 * A quick drain measurement on MySQL/MariaDB (not a test): publishes a backlog, then times one
 * relay delivering it with a no-op handler.
 *
 *   npx tsx --tsconfig tsconfig.json packages/mysql/test/drain.ts [backlog=20000] [concurrency=200] [batchSize=200]
 *
 * Uses MYSQL_URL (default mysql://root@127.0.0.1:3306/test); drops its table at the end.
 */
import { deferred, testMysqlUri, uniqueTableName } from '@outboxkit/conformance'
import { createRelay, defineOutbox, migrate } from '@outboxkit/core'
import { mysqlBackend, publishMany } from '@outboxkit/mysql'
import mysql from 'mysql2/promise'

const [backlog = 20_000, concurrency = 200, batchSize = 200] = process.argv.slice(2).map(Number)
const pool = mysql.createPool({ uri: testMysqlUri(), connectionLimit: 8 })
const outbox = defineOutbox({ table: uniqueTableName('drain') })
await migrate(outbox, mysqlBackend({ pool }))
try {
  const publishStart = performance.now()
  for (let done = 0; done < backlog; done += 1_000) {
    const conn = await pool.getConnection()
    try {
      await conn.beginTransaction()
      await publishMany(
        outbox,
        conn,
        Array.from({ length: Math.min(1_000, backlog - done) }, (_, i) => ({
          topic: 't',
          payload: { n: done + i },
        })),
      )
      await conn.commit()
    } finally {
      conn.release()
    }
  }
  const publishMs = performance.now() - publishStart
  let delivered = 0
  const all = deferred()
  const relay = createRelay(outbox, {
    backend: mysqlBackend({ uri: testMysqlUri(), connectionLimit: 10 }),
    concurrency,
    batchSize,
    pollIntervalMs: 100,
    handlers: {
      t: async () => {
        if (++delivered === backlog) all.resolve()
      },
    },
  })
  const start = performance.now()
  await relay.start()
  await all.promise
  await relay.stop()
  const ms = performance.now() - start
  const [left] = await pool.query(`SELECT COUNT(*) AS n FROM \`${outbox.table.name}\``)
  const [[version]] = (await pool.query('SELECT VERSION() AS v')) as unknown as [[{ v: string }]]
  console.log(
    JSON.stringify({
      server: version.v,
      backlog,
      concurrency,
      batchSize,
      publishManyOf1000PerSec: Math.round(backlog / (publishMs / 1000)),
      drainMs: Math.round(ms),
      drainPerSec: Math.round(backlog / (ms / 1000)),
      rowsLeft: Number((left as { n: number }[])[0]!.n),
    }),
  )
} finally {
  await pool.query(`DROP TABLE IF EXISTS \`${outbox.table.name}\``)
  await pool.end()
}
