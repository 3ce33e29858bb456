import { createRelay, defineOutbox, type OutboxBackend } from '@outboxkit/core'
import { type BenchRelayOptions, countStatements } from '../contenders/outboxkit.js'
import { OUTBOX_TABLE, TOPIC } from '../workload.js'

/** The databases of the backends scenario. */
export type BackendKind = 'postgresql' | 'mysql' | 'sqlite'

/** What one relay child of the backends scenario drains. */
export interface BackendsJobSpec {
  backend: BackendKind
  /** PostgreSQL connection string, MySQL URI, or SQLite database file. */
  target: string
  /** Messages of the backlog: the drain ends when this many were delivered. */
  count: number
  relay: BenchRelayOptions
  /** Fails the drain (instead of hanging the bench) when it has not finished in this many ms. */
  timeoutMs: number
}

/** One relay child's drain. */
export interface BackendsJobResult {
  messages: number
  /** From `relay.start()` to the last delivered outcome written. */
  seconds: number
  perSecond: number
  cpuUserMs: number
  cpuSystemMs: number
  claims: number
  claimedRows: number
  errors: number
}

/**
 * The relay backend of `spec`, each with its package's own defaults: pgBackend (pool 10),
 * mysqlBackend from a URI (pool 10), sqliteBackend on its own connection to the file (WAL).
 */
async function backendFor(spec: BackendsJobSpec): Promise<OutboxBackend> {
  switch (spec.backend) {
    case 'postgresql':
      return (await import('@outboxkit/pg')).pgBackend({ connectionString: spec.target })
    case 'mysql':
      return (await import('@outboxkit/mysql')).mysqlBackend({ uri: spec.target })
    case 'sqlite':
      return (await import('@outboxkit/sqlite')).sqliteBackend({ filename: spec.target })
  }
}

/**
 * One relay with a no-op handler, in its own process. It warms its connection (one claim of a
 * topic nobody publishes), reports `{ ready: true }`, waits for the parent's `go` (the parent loads
 * the backlog meanwhile), then times `relay.start()` until `count` messages were delivered. A
 * `stop` before the `go` (the load failed) ends it without draining.
 */
export async function runBackendsJob(
  spec: BackendsJobSpec,
  progress: (data: unknown) => void,
): Promise<BackendsJobResult> {
  const outbox = defineOutbox({ table: OUTBOX_TABLE })
  const counted = countStatements(await backendFor(spec))
  let delivered = 0
  let finished!: () => void
  const allDelivered = new Promise<void>((resolve) => {
    finished = resolve
  })
  const relay = createRelay(outbox, {
    backend: counted.backend,
    handlers: { [TOPIC]: () => {} },
    ...spec.relay,
  })
  relay.on('delivered', () => {
    if (++delivered === spec.count) finished()
  })
  let signal!: (go: boolean) => void
  const command = new Promise<boolean>((resolve) => {
    signal = resolve
  })
  process.on('message', (m: any) => {
    if (m?.type === 'go') signal(true)
    else if (m?.type === 'stop') signal(false)
  })
  // A parent that went away before the go never sends one: end instead of holding connections.
  process.once('disconnect', () => signal(false))
  try {
    await counted.backend.claim({
      table: outbox.table,
      topics: ['warm-up'],
      limit: 1,
      leaseMs: 1,
      maxAttempts: 1,
    })
    counted.reset()
    progress({ ready: true })
    if (!(await command)) {
      await counted.backend.close()
      return {
        messages: 0,
        seconds: 0,
        perSecond: 0,
        cpuUserMs: 0,
        cpuSystemMs: 0,
        claims: 0,
        claimedRows: 0,
        errors: 0,
      }
    }
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `bench: the ${spec.backend} drain delivered ${delivered} of ${spec.count} messages in ${spec.timeoutMs} ms (${relay.stats.errors} relay error(s))`,
            ),
          ),
        spec.timeoutMs,
      )
    })
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    try {
      await relay.start()
      await Promise.race([allDelivered, timeout])
    } finally {
      clearTimeout(timer)
    }
    const seconds = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    await relay.stop()
    return {
      messages: delivered,
      seconds,
      perSecond: delivered / seconds,
      cpuUserMs: cpu.user / 1000,
      cpuSystemMs: cpu.system / 1000,
      claims: counted.counts.claim ?? 0,
      claimedRows: counted.counts.claimedRows ?? 0,
      errors: relay.stats.errors,
    }
  } finally {
    process.removeAllListeners('message')
    process.removeAllListeners('disconnect')
  }
}
