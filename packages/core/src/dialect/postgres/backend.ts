import type { Outbox } from '../../outbox/define-outbox.js'
import { toOutboxError } from '../../outbox/errors.js'
import type {
  ClaimedRow,
  ClaimRequest,
  ExtendLeaseRequest,
  OutboxBackend,
  SettleRequest,
  WakeHandlers,
  WakeSubscription,
} from '../../protocol/backend.js'
import { claimedRowFrom } from '../../protocol/backend-rows.js'
import { postgresAdminWrites, postgresListings } from './admin-backend.js'
import { postgresInboxBackend } from './inbox-backend.js'
import { type PostgresRun, postgresRun } from './run.js'
import { postgresStatements } from './statements.js'
import type { ReplicationConnection, ReplicationHandlers } from './wal/reader.js'
import { checkWalServer, createPostgresWal, migrateWal, walUnavailable } from './wal/wal.js'

/**
 * The small slice of a PostgreSQL driver a relay backend needs. `@outboxkit/pg`,
 * `@outboxkit/postgres-js` and `@outboxkit/pglite` each implement it in a few lines; core turns
 * it into a full {@link OutboxBackend} with {@link createPostgresBackend}.
 */
export interface PostgresExecutor {
  /** Driver name for error messages, e.g. `'pg'`. */
  readonly name: string
  /**
   * Runs one parameterised statement outside any transaction (autocommit) and returns its rows.
   * `statementName` is a stable name for drivers that cache prepared statements.
   * Arrays in `params` are PostgreSQL arrays; strings bound to `::text` stay text.
   */
  query(text: string, params: readonly unknown[], statementName?: string): Promise<Record<string, unknown>[]>
  /** Runs a multi-statement script in one implicit transaction (used by `migrate`). */
  exec(script: string): Promise<void>
  /** Optional LISTEN support on a dedicated connection that reconnects by itself. */
  listen?(channel: string, handlers: WakeHandlers): Promise<WakeSubscription>
  /**
   * Optional: a replication client for the WAL transport (docs/wal.md). Opens a connection with
   * `replication=database`, sends `command` (START_REPLICATION) and resolves once the server
   * streams (CopyBoth), or rejects with the server's error (its SQLSTATE in `code`).
   */
  replicate?(command: string, handlers: ReplicationHandlers): Promise<ReplicationConnection>
  /** Releases what the executor created itself (never a user's pool). */
  close(): Promise<void>
}

/** `claim`: one `UPDATE ... RETURNING` of the due rows (attempts, lease and dead-letter at claim). */
function postgresClaim(run: PostgresRun): OutboxBackend['claim'] {
  return async (req: ClaimRequest): Promise<ClaimedRow[]> => {
    const sql = postgresStatements(req.table)
    const rows = await run(
      'claim',
      req.ordering ? sql.claimOrdered : sql.claim,
      req.ordering
        ? [req.topics, req.limit, req.leaseMs, req.maxAttempts, req.ordering.continueAfterDead]
        : [req.topics, req.limit, req.leaseMs, req.maxAttempts],
      req.ordering ? 'outboxkit_claim_ordered' : 'outboxkit_claim',
    )
    const claimed = new Array<ClaimedRow>(rows.length)
    for (let i = 0; i < rows.length; i++) claimed[i] = claimedRowFrom(rows[i]!)
    return claimed
  }
}

/** `settle`: one fenced statement for the whole batch (a DELETE when every row was delivered). */
function postgresSettle(run: PostgresRun): OutboxBackend['settle'] {
  return async (req: SettleRequest): Promise<string[]> => {
    const n = req.settlements.length
    if (n === 0) return []
    const ids = new Array<string>(n)
    const attempts = new Array<number>(n)
    let allDelivered = !req.keepDelivered
    for (let i = 0; i < n; i++) {
      const s = req.settlements[i]!
      ids[i] = s.id
      attempts[i] = s.attempts
      if (s.outcome !== 'delivered') allDelivered = false
    }
    const sql = postgresStatements(req.table)
    let rows: Record<string, unknown>[]
    if (allDelivered) {
      // The common case: one fenced DELETE over two arrays instead of five, sent as array
      // literals built here: ids are canonical UUID text and attempts integers, so neither needs
      // quoting (a driver's generic array encoder quotes and escapes every element).
      rows = await run(
        'settle',
        sql.settleDelivered,
        [`{${ids.join(',')}}`, `{${attempts.join(',')}}`],
        'outboxkit_settle_delivered',
      )
    } else {
      const outcomes = new Array<string>(n)
      const delays = new Array<number>(n)
      const errors = new Array<string | null>(n)
      for (let i = 0; i < n; i++) {
        const s = req.settlements[i]!
        outcomes[i] = s.outcome
        delays[i] = s.outcome === 'retry' ? s.delayMs : 0
        errors[i] = s.outcome === 'delivered' ? null : s.error
      }
      rows = await run(
        'settle',
        sql.settle,
        [ids, attempts, outcomes, delays, errors, req.keepDelivered],
        'outboxkit_settle',
      )
    }
    // The statements return the ids that did NOT apply (fenced out): usually none.
    if (rows.length === 0) return ids
    const missed = new Set(rows.map((r) => r.id as string))
    return ids.filter((id) => !missed.has(id))
  }
}

/** `extendLease`: one fenced UPDATE; returns the ids it extended. */
function postgresExtendLease(run: PostgresRun): NonNullable<OutboxBackend['extendLease']> {
  return async (req: ExtendLeaseRequest): Promise<string[]> => {
    if (req.rows.length === 0) return []
    const sql = postgresStatements(req.table)
    const rows = await run(
      'lease extension',
      sql.extendLease,
      [req.rows.map((r) => r.id), req.rows.map((r) => r.attempts), req.leaseMs],
      'outboxkit_extend',
    )
    return rows.map((r) => r.id as string)
  }
}

function noReplication(source: string) {
  return walUnavailable(
    source,
    `transport 'wal' needs a backend with a replication client, and ${source} has none (PGlite cannot stream a replication slot). Use pgBackend (@outboxkit/pg) or postgresJsBackend (@outboxkit/postgres-js) on a PostgreSQL 14+ server, or transport 'table'.`,
  )
}

/**
 * Builds an {@link OutboxBackend} for PostgreSQL from a {@link PostgresExecutor}, using core's
 * SQL: claim with `FOR UPDATE SKIP LOCKED` and a lease, attempts at claim, dead-letter at claim,
 * fenced batched settles.
 */
export function createPostgresBackend(executor: PostgresExecutor): OutboxBackend {
  const source = executor.name
  const run = postgresRun(executor)
  const backend: OutboxBackend = {
    name: source,
    dialect: 'postgres',
    async migrate(outbox: Outbox) {
      if (outbox.transport === 'wal') {
        if (!executor.replicate) throw noReplication(source)
        // Before the table's DDL: a server that cannot do it refuses the migrate with nothing written.
        await checkWalServer(run, source)
      }
      try {
        await executor.exec(postgresStatements(outbox.table).migrate)
      } catch (err) {
        throw toOutboxError(err, source, `migrate of table ${outbox.table.display}`)
      }
      if (outbox.transport === 'wal') await migrateWal(run, outbox)
    },
    claim: postgresClaim(run),
    settle: postgresSettle(run),
    extendLease: postgresExtendLease(run),
    ...postgresAdminWrites(run),
    ...postgresListings(run),
    ...postgresInboxBackend(executor),
    close: () => executor.close(),
  }
  if (executor.replicate) backend.wal = createPostgresWal(run, executor.replicate.bind(executor), source)
  if (executor.listen) {
    const listen = executor.listen.bind(executor)
    backend.listen = (channel: string, handlers: WakeHandlers) => listen(channel, handlers)
  }
  return backend
}
