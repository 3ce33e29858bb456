/**
 * A relay in a process of its own, so tests can SIGKILL it. Started by {@link spawnRelayProcess}
 * with `node --import tsx` from the workspace sources; configured by the JSON in
 * `OUTBOXKIT_RELAY_CONFIG` (see {@link RelayWorkerConfig}); talks to its parent with JSON lines
 * on stdout. SIGTERM stops the relay gracefully; a closed stdin (the parent died) exits at once.
 *
 * @module
 */
import { createRelay, type DeliveredMessage, isOutboxError, type OutboxBackend, Retry } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import { randomInt } from './database.js'
import { inboxEffect } from './inbox-effect.js'
import { runOutbox } from './ledger.js'
import { type DatabaseTarget, openLedgerDb, quietMysqlPool } from './ledger-db.js'
import { ledgerSql } from './ledger-sql.js'
import { RELAY_CONFIG_ENV, type RelayWorkerConfig, type WorkerLine } from './relay-worker-config.js'

function say(line: WorkerLine): void {
  process.stdout.write(`${JSON.stringify(line)}\n`)
}

const config = JSON.parse(process.env[RELAY_CONFIG_ENV] ?? 'null') as RelayWorkerConfig | null
if (!config) throw new Error(`${RELAY_CONFIG_ENV} is not set`)

// The parent holds our stdin open; if it goes away, so do we (no orphan relays).
process.stdin.on('end', () => process.exit(3))
process.stdin.resume()

const orderedTopics = config.orderedTopics ?? []
const outbox = runOutbox(config.tables, { transport: config.transport ?? 'table', orderedTopics })
const pid = process.pid
const target: DatabaseTarget = { dialect: config.dialect ?? 'postgres', url: config.url }
const statements = ledgerSql(target.dialect, config.tables)
// MySQL has no application_name: each new connection of this process registers its id first.
const register = statements.registerConnection ? { sql: statements.registerConnection, pid } : undefined
const ledger = await openLedgerDb(target, {
  applicationName: config.applicationName,
  max: Math.max(2, config.relay.concurrency),
  commandTimeoutMs: config.commandTimeoutMs,
  ...(register ? { register } : {}),
})
const noteExplained = (id: string, attempt: number, why: string) =>
  ledger.execute(statements.explain, [id, attempt, why, pid]).catch(() => {})

/** What to close after the relay stopped (what the backend does not own). */
const closeAfterStop: (() => Promise<unknown>)[] = [() => ledger.close()]

/** The relay's backend on the worker's database, with its own connections. */
async function relayBackend(): Promise<OutboxBackend> {
  switch (target.dialect) {
    case 'postgres':
      if (config!.pgDriver === 'postgres-js') {
        const { postgresJsBackend } = await import('@outboxkit/postgres-js')
        return postgresJsBackend({
          url: config!.backendUrl ?? config!.url,
          ...(config!.backendUrl === undefined
            ? { connection: { application_name: config!.applicationName } }
            : {}),
          commandTimeoutMs: config!.commandTimeoutMs,
          max: 4,
        })
      }
      return pgBackend({
        connectionString: config!.backendUrl ?? config!.url,
        ...(config!.backendUrl === undefined ? { application_name: config!.applicationName } : {}),
        commandTimeoutMs: config!.commandTimeoutMs,
        max: 4,
      })
    case 'mysql': {
      const { mysqlBackend } = await import('@outboxkit/mysql')
      // The pool form, so its connections register their ids (the backend leaves it open: we end it).
      const pool = await quietMysqlPool(config!.url, {
        max: 4,
        commandTimeoutMs: config!.commandTimeoutMs,
        register,
      })
      closeAfterStop.push(() => pool.end())
      return mysqlBackend({ pool, commandTimeoutMs: config!.commandTimeoutMs })
    }
    case 'sqlite': {
      const { sqliteBackend } = await import('@outboxkit/sqlite')
      return sqliteBackend({ filename: config!.url, busyTimeoutMs: 10_000 })
    }
    default:
      throw new Error(`[outboxkit] [reliability] unknown dialect ${JSON.stringify(target.dialect)}`)
  }
}

async function sideEffect(message: DeliveredMessage, signal: AbortSignal): Promise<void> {
  signal.addEventListener('abort', () => {
    const reason = String((signal.reason as Error | undefined)?.message ?? signal.reason)
    void noteExplained(message.id, message.attempts, reason.includes('lease') ? 'lease-expired' : 'aborted')
  })
  await ledger.execute(statements.insertLedger, [message.id, message.attempts, pid, message.topic])
}

let onSaidReady!: () => void
const saidReady = new Promise<void>((resolve) => {
  onSaidReady = resolve
})

const { handler } = config
/** The `work` handler (also that of every ordered topic): injected failures, the side effect, a sleep. */
const work = async (message: DeliveredMessage, { signal }: { signal: AbortSignal }): Promise<void> => {
  const roll = Math.random()
  if (roll < handler.failRate) throw new Error('injected failure')
  if (roll < handler.failRate + handler.retryRate)
    throw new Retry({ delayMs: randomInt(0, handler.retryMaxDelayMs), reason: 'injected Retry' })
  await sideEffect(message, signal)
  if (config.inbox) await inboxEffect(ledger.driver, config.inbox, message, pid)
  const ms = randomInt(handler.sleepMs[0], handler.sleepMs[1])
  if (ms > 0) await new Promise((r) => setTimeout(r, ms))
}

const relay = createRelay(outbox, {
  backend: await relayBackend(),
  ...config.relay,
  handlers: {
    ...Object.fromEntries(orderedTopics.map((topic) => [topic, work])),
    work,
    async suicide(message, { signal }) {
      await sideEffect(message, signal)
      // A claim can run inside relay.start() (SQLite claims synchronously): die once the parent
      // knows the relay started, so a suicide is never taken for a failed start.
      await saidReady
      process.kill(process.pid, 'SIGKILL')
    },
  },
})
relay.on('delivered', (e) => {
  if (!e.settled) void noteExplained(e.message.id, e.message.attempts, 'fenced')
})
// Through a transaction-mode pooler the backend's LISTEN probe is not heard: the relay polls.
relay.on('listenUnavailable', (e) => say({ type: 'listenUnavailable', reason: e.reason.slice(0, 300) }))
relay.on('error', (e) => {
  const err = e.error as Error
  say({
    type: 'error',
    during: e.during,
    code: isOutboxError(err) ? err.code : String((err as { code?: unknown })?.code ?? 'unknown'),
    message: String(err?.message ?? err).slice(0, 300),
  })
})

process.on('SIGTERM', () => {
  void relay
    .stop({ graceMs: config.graceMs })
    .then(() => Promise.allSettled(closeAfterStop.map((close) => close())))
    .finally(() => {
      say({ type: 'stopped', pid, stats: { ...relay.stats } })
      process.exit(0)
    })
})

await relay.start()
say({ type: 'ready', pid })
onSaidReady()
