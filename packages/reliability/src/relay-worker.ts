/**
 * A relay in a process of its own, so tests can SIGKILL it. Started by {@link spawnRelayProcess}
 * with `node --import tsx` from the workspace sources; configured by the JSON in
 * `OUTBOXKIT_RELAY_CONFIG` (see {@link RelayWorkerConfig}); talks to its parent with JSON lines
 * on stdout. SIGTERM stops the relay gracefully; a closed stdin (the parent died) exits at once.
 *
 * @module
 */
import { createRelay, type DeliveredMessage, isOutboxError, Retry } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import { quietPool, randomInt } from './database.js'
import { explainSql, ledgerInsertSql, runOutbox } from './ledger.js'
import { RELAY_CONFIG_ENV, type RelayWorkerConfig, type WorkerLine } from './relay-worker-config.js'

function say(line: WorkerLine): void {
  process.stdout.write(`${JSON.stringify(line)}\n`)
}

const config = JSON.parse(process.env[RELAY_CONFIG_ENV] ?? 'null') as RelayWorkerConfig | null
if (!config) throw new Error(`${RELAY_CONFIG_ENV} is not set`)

// The parent holds our stdin open; if it goes away, so do we (no orphan relays).
process.stdin.on('end', () => process.exit(3))
process.stdin.resume()

const outbox = runOutbox(config.tables)
const pid = process.pid
const ledgerPool = quietPool({
  connectionString: config.url,
  application_name: config.applicationName,
  max: Math.max(2, config.relay.concurrency),
  query_timeout: config.commandTimeoutMs,
})
const insertLedger = ledgerInsertSql(config.tables)
const explain = explainSql(config.tables)
const noteExplained = (id: string, attempt: number, why: string) =>
  ledgerPool.query(explain, [id, attempt, why, pid]).catch(() => {})

async function sideEffect(message: DeliveredMessage, signal: AbortSignal): Promise<void> {
  signal.addEventListener('abort', () => {
    const reason = String((signal.reason as Error | undefined)?.message ?? signal.reason)
    void noteExplained(message.id, message.attempts, reason.includes('lease') ? 'lease-expired' : 'aborted')
  })
  await ledgerPool.query(insertLedger, [message.id, message.attempts, pid, message.topic])
}

const { handler } = config
const relay = createRelay(outbox, {
  backend: pgBackend({
    connectionString: config.url,
    application_name: config.applicationName,
    commandTimeoutMs: config.commandTimeoutMs,
    max: 4,
  }),
  ...config.relay,
  handlers: {
    async work(message, { signal }) {
      const roll = Math.random()
      if (roll < handler.failRate) throw new Error('injected failure')
      if (roll < handler.failRate + handler.retryRate)
        throw new Retry({ delayMs: randomInt(0, handler.retryMaxDelayMs), reason: 'injected Retry' })
      await sideEffect(message, signal)
      const ms = randomInt(handler.sleepMs[0], handler.sleepMs[1])
      if (ms > 0) await new Promise((r) => setTimeout(r, ms))
    },
    async suicide(message, { signal }) {
      await sideEffect(message, signal)
      process.kill(process.pid, 'SIGKILL')
    },
  },
})
relay.on('delivered', (e) => {
  if (!e.settled) void noteExplained(e.message.id, e.message.attempts, 'fenced')
})
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
    .then(() => ledgerPool.end())
    .finally(() => {
      say({ type: 'stopped', pid, stats: { ...relay.stats } })
      process.exit(0)
    })
})

await relay.start()
say({ type: 'ready', pid })
