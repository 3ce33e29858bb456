import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { afterAll, expect, test } from 'vitest'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'outboxkit-otel-absent-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// A module hook that makes '@opentelemetry/api' impossible to resolve, and records each attempt.
const blocker = `
import { register } from 'node:module'
register('data:text/javascript,' + encodeURIComponent(\`
import { appendFileSync } from 'node:fs'
export async function resolve(specifier, context, next) {
  if (specifier === '@opentelemetry/api' || specifier.startsWith('@opentelemetry/api/')) {
    appendFileSync(process.env.BLOCKED_LOG, specifier + '\\\\n')
    const error = new Error('Cannot find package ' + specifier)
    error.code = 'ERR_MODULE_NOT_FOUND'
    throw error
  }
  return next(specifier, context)
}\`))
`

// Publishes on a real pg transaction and delivers with a relay, with the package out of reach.
const child = `
import { createRequire } from 'node:module'
import { createRelay, defineOutbox, migrate } from '@outboxkit/core'
import { pgBackend, publish } from '@outboxkit/pg'
const pg = createRequire(${JSON.stringify(join(root, 'package.json'))})('pg')
const url = process.env.DATABASE_URL
const outbox = defineOutbox({ table: process.env.TABLE })
const backend = pgBackend({ connectionString: url })
await migrate(outbox, backend)
const client = new pg.Client({ connectionString: url })
await client.connect()
await client.query('BEGIN')
const { id } = await publish(outbox, client, { topic: 't', payload: { n: 1 }, headers: { tenant: 'a' } })
await client.query('COMMIT')
const { rows } = await client.query('SELECT headers FROM ' + process.env.TABLE + ' WHERE id = $1', [id])
let received
const relay = createRelay(outbox, { backend, handlers: { t: (m) => { received = m } }, pollIntervalMs: 50 })
const delivered = new Promise((resolve) => relay.on('delivered', resolve))
await relay.start()
await delivered
await relay.stop()
await client.query('DROP TABLE ' + process.env.TABLE)
await client.end()
console.log(JSON.stringify({ storedHeaders: rows[0].headers, receivedHeaders: received.headers, id: received.id === id }))
`

test('without @opentelemetry/api, core imports, publishes and delivers, and writes no trace headers', async () => {
  const blockerFile = join(dir, 'block.mjs')
  const childFile = join(dir, 'child.mts')
  const blockedLog = join(dir, 'blocked.log')
  writeFileSync(blockerFile, blocker)
  writeFileSync(childFile, child)
  writeFileSync(blockedLog, '')
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--import', blockerFile, childFile],
    {
      cwd: root, // tsx maps @outboxkit/* to the sources through the root tsconfig
      env: {
        ...process.env,
        DATABASE_URL: testDatabaseUrl(),
        TABLE: uniqueTableName('core_no_otel'),
        BLOCKED_LOG: blockedLog,
      },
      timeout: 30_000,
    },
  )
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!)
  expect(result).toEqual({ storedHeaders: { tenant: 'a' }, receivedHeaders: { tenant: 'a' }, id: true })
  // Core did try to load the API (lazily) and carried on without it.
  expect(readFileSync(blockedLog, 'utf8').split('\n').filter(Boolean)).toEqual(['@opentelemetry/api'])
})
