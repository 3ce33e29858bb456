import type { OutboxDialect, RetryPolicy } from '@outboxkit/core'
import type { InboxEffectConfig } from './inbox-effect.js'
import type { LedgerTables } from './ledger.js'

/** How the `work` handler of a relay worker behaves. */
export interface WorkerHandlerConfig {
  /** Probability that a delivery throws a plain Error before its side effect. */
  failRate: number
  /** Probability that a delivery throws `Retry` (delay up to `retryMaxDelayMs`) before its side effect. */
  retryRate: number
  retryMaxDelayMs: number
  /** After the side effect, the handler sleeps a random time in this range (ms), so kills land mid-handler. */
  sleepMs: readonly [number, number]
}

/**
 * Everything a relay worker process needs, passed as JSON in the `OUTBOXKIT_RELAY_CONFIG`
 * environment variable. The worker runs one relay with handlers for two topics:
 * `work` (ledger write, sleep, random failures per {@link WorkerHandlerConfig}) and `suicide`
 * (ledger write, then `process.kill(process.pid, 'SIGKILL')`), and one like `work` for each of
 * its `orderedTopics`.
 */
export interface RelayWorkerConfig {
  /**
   * The backend the worker builds: `pgBackend`, `mysqlBackend` or `sqliteBackend`. Default
   * `'postgres'`.
   */
  dialect?: OutboxDialect
  /** PostgreSQL connection string, MySQL URI, or SQLite file (see `DatabaseTarget`). */
  url: string
  /**
   * PostgreSQL: the connection string of the relay's `pgBackend` when it is not `url`, e.g. a
   * transaction-mode PgBouncer in front of the same database; the worker's side effects still
   * write to `url` directly. The backend's connections then carry no `application_name`: PgBouncer
   * would leave it on its pooled server connections after the relay died, and the fleet, which
   * waits until no connection of a dead relay is left (`openConnections`), would wait for them.
   * Default: `url`.
   */
  backendUrl?: string
  /**
   * PostgreSQL: the driver of the relay's backend, `pgBackend` (node-postgres) or
   * `postgresJsBackend` (postgres.js). Default `'pg'`.
   */
  pgDriver?: 'pg' | 'postgres-js'
  tables: LedgerTables
  /** The outbox's transport (docs/wal.md). Default `'table'`. */
  transport?: 'table' | 'wal'
  /** Topics declared ordered (docs/ordering.md), each handled like `work`. Default none. */
  orderedTopics?: readonly string[]
  /**
   * The worker's name: PostgreSQL `application_name` of every connection of the worker, to find
   * (and terminate) them. (MySQL connections register their ids in `tables.connections` instead.)
   */
  applicationName: string
  commandTimeoutMs: number
  relay: {
    concurrency: number
    batchSize: number
    leaseMs: number
    pollIntervalMs: number
    maxAttempts: number
    retry: RetryPolicy
    notify: boolean
  }
  handler: WorkerHandlerConfig
  /**
   * The inbox mode: after its ledger write, the `work` handler runs the business transaction of
   * {@link InboxEffectConfig} through `processOnce` (see `inbox-effect.ts`).
   */
  inbox?: InboxEffectConfig
  /** Grace of `relay.stop()` on SIGTERM. */
  graceMs: number
}

/** Name of the environment variable carrying the {@link RelayWorkerConfig}. */
export const RELAY_CONFIG_ENV = 'OUTBOXKIT_RELAY_CONFIG'

/** A line the worker prints on stdout (JSON). */
export type WorkerLine =
  | { type: 'ready'; pid: number }
  | { type: 'error'; during: string; code: string; message: string }
  | { type: 'listenUnavailable'; reason: string }
  | { type: 'stopped'; pid: number; stats: Record<string, number> }
