// `outboxkit inbox migrate | stats | purge` on the real PostgreSQL server, in this process
// (runCli, what the binary calls), asserted through raw SQL.
import { testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import pg from 'pg'
import { afterAll, expect, test } from 'vitest'
import { runCli } from '../src/run.js'

const url = testDatabaseUrl()
const pool = new pg.Pool({ connectionString: url, max: 2 })
const table = uniqueTableName('cli_inbox')
afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS ${table}`)
  await pool.end()
})

async function cli(args: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, {
    stdout: (t) => {
      stdout += `${t}\n`
    },
    stderr: (t) => {
      stderr += `${t}\n`
    },
    env: { DATABASE_URL: url, INBOX_TABLE: table },
  })
  return { code, stdout, stderr }
}

test('inbox migrate, stats and purge (default window 7 days, --older-than, per consumer)', async () => {
  expect((await cli(['inbox', 'migrate'])).code).toBe(0)
  const seed = (consumer: string, id: string, days: number) =>
    pool.query(
      `INSERT INTO ${table} (consumer, message_id, processed_at) VALUES ($1, $2, now() - $3 * interval '1 day')`,
      [consumer, id, days],
    )
  await seed('default', 'a', 10)
  await seed('default', 'b', 3)
  await seed('default', 'c', 0)
  await seed('billing', 'a', 10)
  const stats = await cli(['inbox', 'stats', '--json'])
  expect(stats.code).toBe(0)
  expect(JSON.parse(stats.stdout)).toMatchObject({ consumer: 'default', count: 3 })
  expect(JSON.parse(stats.stdout).oldestAgeMs).toBeGreaterThan(9 * 86_400_000)
  const byDefault = await cli(['inbox', 'purge', '--json'])
  expect(byDefault.code).toBe(0)
  expect(JSON.parse(byDefault.stdout)).toMatchObject({ purged: 1, olderThanMs: 7 * 86_400_000 })
  const shorter = await cli(['inbox', 'purge', '--older-than', '1d', '--batch-size', '1'])
  expect(shorter.stdout).toContain('purged 1 processed id(s) of default older than 1d')
  const left = await pool.query(`SELECT consumer, message_id FROM ${table} ORDER BY consumer, message_id`)
  expect(left.rows).toEqual([
    { consumer: 'billing', message_id: 'a' },
    { consumer: 'default', message_id: 'c' },
  ])
  const billing = await cli(['inbox', 'purge', '--consumer', 'billing', '--older-than', '1d'])
  expect(billing.stdout).toContain('purged 1')
  const bad = await cli(['inbox', 'purge', '--batch-size', 'x'])
  expect(bad.code).not.toBe(0)
})
