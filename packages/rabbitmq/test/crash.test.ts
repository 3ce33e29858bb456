// Relays SIGKILLed while they forward committed messages into RabbitMQ: every committed message
// ends in the queue (at least once), and each key's messages first appear in commit order.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { testDatabaseUrl, uniqueTableName, waitFor } from '@outboxkit/conformance'
import { defineOutbox, migrate } from '@outboxkit/core'
import { pgBackend, publish } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { RABBITMQ_URL, TestBroker } from './rabbitmq-broker.js'

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))
const childPath = fileURLToPath(new URL('./support/relay-child.ts', import.meta.url))
const table = uniqueTableName('rabbitmq_crash')
let broker: TestBroker
let pool: pg.Pool
const children = new Set<ChildProcess>()
beforeAll(async () => {
  broker = await new TestBroker().start()
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 })
})
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  await broker.close()
  await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {})
  await pool.end()
})

/** Starts a relay process forwarding to `routingKey`; resolves once its relay started. */
async function startRelayProcess(routingKey: string): Promise<ChildProcess> {
  const config = {
    databaseUrl: testDatabaseUrl(),
    rabbitmqUrl: RABBITMQ_URL,
    table,
    exchange: broker.exchange,
    routingKey,
  }
  const child = spawn(process.execPath, ['--import', 'tsx', childPath], {
    cwd: repoRoot,
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: `${repoRoot}tsconfig.json`,
      OUTBOXKIT_CHILD: JSON.stringify(config),
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  children.add(child)
  child.on('exit', () => children.delete(child))
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('started') && resolve())
    child.on('exit', (code) => reject(new Error(`the relay process exited with ${code} before it started`)))
  })
  return child
}

const killed = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    child.once('exit', () => resolve())
    child.kill('SIGKILL')
  })

test('relays SIGKILLed mid-drain: every committed message is in the queue, each key in commit order', async () => {
  const outbox = defineOutbox({ table, orderedTopics: ['order.created'] })
  await migrate(outbox, pgBackend({ pool }))
  const queue = await broker.queue('crash')
  const committed: { id: string; key: string }[] = []
  for (let i = 0; i < 400; i++) {
    const key = `k${i % 4}`
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      committed.push({
        id: (await publish(outbox, client, { topic: 'order.created', key, payload: { i } })).id,
        key,
      })
      await client.query('COMMIT')
    } finally {
      client.release()
    }
  }
  const seen: { id: string; key: string }[] = []
  const read = async () => {
    for (const m of await broker.drain(queue))
      seen.push({ id: String(m.properties.messageId), key: String(m.properties.headers?.['outboxkit-key']) })
    return seen.length
  }
  for (const killAt of [40, 160]) {
    const child = await startRelayProcess('crash')
    await waitFor(async () => (await read()) >= killAt, {
      timeoutMs: 30_000,
      what: `${killAt} messages in the queue`,
    })
    await killed(child)
    expect(new Set(seen.map((s) => s.id)).size, 'the kill lands mid-drain').toBeLessThan(committed.length)
  }
  const last = await startRelayProcess('crash')
  const allSeen = async () => {
    await read()
    const ids = new Set(seen.map((s) => s.id))
    return committed.every((c) => ids.has(c.id))
  }
  await waitFor(allSeen, { timeoutMs: 60_000, what: 'every committed message in the queue' })
  await killed(last)
  expect(new Set(seen.map((s) => s.id))).toEqual(new Set(committed.map((c) => c.id)))
  for (const key of ['k0', 'k1', 'k2', 'k3']) {
    const firstSeen = [...new Set(seen.filter((s) => s.key === key).map((s) => s.id))]
    expect(firstSeen, `order of ${key}`).toEqual(committed.filter((c) => c.key === key).map((c) => c.id))
  }
})
