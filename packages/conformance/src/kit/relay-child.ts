// A relay in a process of its own, forwarding into a broker, so a crash test can SIGKILL it:
// `node --import tsx relay-child.ts` with the root tsconfig, configured by OUTBOXKIT_CHILD (JSON,
// a RelayChildConfig). The broker's handler comes from `forwarderModule`, a module of the package
// under test whose `createForwarder(broker)` returns it. It imports no test runner.
import { setTimeout as sleep } from 'node:timers/promises'
import { createRelay, defineOutbox, type Handler } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'

/** The environment variable that carries a {@link RelayChildConfig}. */
export const RELAY_CHILD_ENV = 'OUTBOXKIT_CHILD'

/** What a relay child is told. */
export interface RelayChildConfig {
  readonly databaseUrl: string
  readonly table: string
  /** The topic it forwards; an ordered topic (`orderedTopics`). */
  readonly topic: string
  /** Absolute path of a module exporting `createForwarder(broker): Promise<Handler>`. */
  readonly forwarderModule: string
  /** What that function is given (URLs, subject, stream...). */
  readonly broker: Record<string, unknown>
  /** A pause before each forward, so a kill lands in the middle of a drain. */
  readonly handlerDelayMs: number
  readonly leaseMs: number
}

/** The shape of a forwarder module. */
export interface ForwarderModule {
  createForwarder(broker: Record<string, unknown>): Promise<Handler>
}

async function main(): Promise<void> {
  const raw = process.env[RELAY_CHILD_ENV]
  if (!raw) throw new Error(`${RELAY_CHILD_ENV} is not set`)
  const config = JSON.parse(raw) as RelayChildConfig
  // The parent holds stdin open: when it dies, so does this process.
  process.stdin.on('end', () => process.exit(3))
  process.stdin.resume()
  const { createForwarder } = (await import(config.forwarderModule)) as ForwarderModule
  const forward = await createForwarder(config.broker)
  const delay = config.handlerDelayMs
  const relay = createRelay(defineOutbox({ table: config.table, orderedTopics: [config.topic] }), {
    backend: pgBackend({ connectionString: config.databaseUrl, max: 4 }),
    handlers: { [config.topic]: async (m, c) => sleep(delay).then(() => forward(m, c)) },
    leaseMs: config.leaseMs,
    pollIntervalMs: 50,
    retry: { baseMs: 20, maxMs: 200 },
  })
  await relay.start()
  process.stdout.write('started\n')
  process.on('SIGTERM', () => relay.stop().then(() => process.exit(0)))
}

if (process.env[RELAY_CHILD_ENV]) await main()
