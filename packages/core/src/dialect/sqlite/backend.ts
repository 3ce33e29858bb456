import type { Outbox } from '../../outbox/define-outbox.js'
import type {
  BlockedKeyRow,
  BlockedKeysRequest,
  ClaimedRow,
  ClaimRequest,
  CountDeadRequest,
  DeadRow,
  DiscardRequest,
  ExtendLeaseRequest,
  ListDeadRequest,
  OutboxBackend,
  PurgeRequest,
  RedriveRequest,
  SettleRequest,
  StatsRequest,
  StatsRow,
  WakeHandlers,
  WakeSubscription,
} from '../../protocol/backend.js'
import { blockedKeyRowFrom, claimedRowFrom, deadRowFrom, statsRowFrom } from '../../protocol/backend-rows.js'
import { sqliteInboxBackend } from './inbox-backend.js'
import { SKIPPED, type SqliteRunner, sqliteRunner } from './runner.js'
import { sqliteStatements } from './statements.js'
import { listenSqliteWake } from './wake.js'

/**
 * The small slice of a synchronous SQLite driver a relay backend needs (better-sqlite3 in
 * `@outboxkit/sqlite`); core turns it into a full {@link OutboxBackend} with
 * {@link createSqliteBackend}. Every method runs to completion before it returns.
 */
export interface SqliteExecutor {
  /** Driver name for error messages, e.g. `'sqlite'`. */
  readonly name: string
  /** Runs one statement that returns rows (a SELECT, or a write with `RETURNING`). */
  all(sql: string, params: readonly unknown[]): Record<string, unknown>[]
  /** Runs one statement that returns no rows; returns how many rows it changed. */
  run(sql: string, params: readonly unknown[]): { changes: number }
  /** Runs a multi-statement script (used by `migrate`, inside {@link SqliteExecutor.immediate}). */
  exec(script: string): void
  /**
   * Whether the connection is inside a transaction right now. Outside {@link SqliteExecutor.immediate}
   * that is someone else's transaction on a shared connection (a `BEGIN` kept open across an
   * `await`): the backend then never runs its own statements in it.
   */
  inTransaction(): boolean
  /**
   * Runs `fn` inside `BEGIN IMMEDIATE ... COMMIT` (`ROLLBACK` when it throws), so it holds the
   * database's write lock from its first read. MUST NOT wait for the lock: when another connection
   * holds it, throw at once an error whose `code` starts with `'SQLITE_BUSY'` (better-sqlite3:
   * busy timeout 0 around the `BEGIN IMMEDIATE`). The backend retries without blocking the event
   * loop, which a producer in the same process may need to finish the transaction that holds it.
   */
  immediate<T>(fn: () => T): T
  /** How long the backend keeps retrying for the write lock before it fails with `TIMEOUT`, in ms. */
  lockTimeoutMs(): number
  /** Releases what the executor created itself (never a user's database). */
  close(): Promise<void>
}

export { isSqliteBusy } from './runner.js'

/** A list filter as a JSON text argument, `null` for no filter. */
const list = (values: readonly string[] | undefined) => (values === undefined ? null : JSON.stringify(values))

/** `claim`: one `UPDATE ... RETURNING` holding the write lock; none while the connection is in someone else's transaction. */
function sqliteClaim(db: SqliteRunner): OutboxBackend['claim'] {
  return async (req: ClaimRequest): Promise<ClaimedRow[]> => {
    const sql = sqliteStatements(req.table)
    const rows = await db.locked(
      'claim',
      () =>
        req.ordering
          ? db.all(sql.claimOrdered, {
              topics: JSON.stringify(req.topics),
              limit: req.limit,
              lease_ms: Math.ceil(req.leaseMs),
              max_attempts: req.maxAttempts,
              continue_topics: JSON.stringify(req.ordering.continueAfterDead),
            })
          : db.all(sql.claim, {
              topics: JSON.stringify(req.topics),
              limit: req.limit,
              lease_ms: Math.ceil(req.leaseMs),
              max_attempts: req.maxAttempts,
            }),
      true,
    )
    if (rows === SKIPPED) return []
    return rows.map(claimedRowFrom)
  }
}

/** `settle`: the fenced DELETE of delivered rows and the fenced UPDATE of the others, in one transaction. */
function sqliteSettle(db: SqliteRunner): OutboxBackend['settle'] {
  return async (req: SettleRequest): Promise<string[]> => {
    if (req.settlements.length === 0) return []
    const sql = sqliteStatements(req.table)
    let delivered = false
    let other = req.keepDelivered
    const settlements = JSON.stringify(
      req.settlements.map((s) => {
        if (s.outcome === 'delivered') delivered = true
        else other = true
        return [
          s.id,
          s.attempts,
          s.outcome,
          s.outcome === 'retry' ? Math.ceil(s.delayMs) : 0,
          s.outcome === 'delivered' ? null : s.error,
        ]
      }),
    )
    return db.write('settle', () => {
      const ids: string[] = []
      if (delivered && !req.keepDelivered) {
        for (const r of db.all(sql.settleDelete, { settlements })) ids.push(r.id as string)
      }
      if (other) {
        for (const r of db.all(sql.settleUpdate, { settlements, keep_delivered: req.keepDelivered }))
          ids.push(r.id as string)
      }
      return ids
    })
  }
}

/** `extendLease`: one fenced UPDATE holding the write lock. */
function sqliteExtendLease(db: SqliteRunner): NonNullable<OutboxBackend['extendLease']> {
  return async (req: ExtendLeaseRequest): Promise<string[]> => {
    if (req.rows.length === 0) return []
    const sql = sqliteStatements(req.table)
    const rows = JSON.stringify(req.rows.map((r) => [r.id, r.attempts]))
    return db.write('lease extension', () =>
      db.all(sql.extendLease, { rows, lease_ms: Math.ceil(req.leaseMs) }).map((r) => r.id as string),
    )
  }
}

/** The admin writes (purge, redrive, discard): one statement each, holding the write lock. */
function sqliteAdminWrites(db: SqliteRunner): Required<Pick<OutboxBackend, 'purge' | 'redrive' | 'discard'>> {
  return {
    async purge(req: PurgeRequest): Promise<number> {
      const sql = sqliteStatements(req.table)
      return db.write('purge', () =>
        db.changes(sql.purge, { states: JSON.stringify(req.states), older_than_ms: req.olderThanMs }),
      )
    },
    async redrive(req: RedriveRequest): Promise<number> {
      const sql = sqliteStatements(req.table)
      return db.write('redrive', () =>
        db.changes(sql.redrive, { ids: list(req.ids), topics: list(req.topics) }),
      )
    },
    async discard(req: DiscardRequest): Promise<number> {
      const sql = sqliteStatements(req.table)
      return db.write('discard', () =>
        db.changes(sql.discard, { ids: list(req.ids), topics: list(req.topics) }),
      )
    },
  }
}

/** The admin reads (stats, dead letters, blocked keys): one read each, outside any write transaction. */
function sqliteListings(
  db: SqliteRunner,
): Required<Pick<OutboxBackend, 'stats' | 'listDead' | 'countDead' | 'blockedKeys'>> {
  return {
    async stats(req: StatsRequest): Promise<StatsRow[]> {
      const sql = sqliteStatements(req.table)
      const states = req.includeDelivered
        ? ['pending', 'processing', 'dead', 'delivered']
        : ['pending', 'processing', 'dead']
      const rows = db.read('stats', () => db.all(sql.stats, { states: JSON.stringify(states) }))
      return rows.map(statsRowFrom)
    },
    async listDead(req: ListDeadRequest): Promise<DeadRow[]> {
      const sql = sqliteStatements(req.table)
      const rows = db.read('listing dead messages', () =>
        db.all(sql.listDead, {
          topics: list(req.topics),
          limit: req.limit,
          after_ms: req.after?.deadAtMs ?? null,
          after_id: req.after?.id ?? null,
          search: req.search ?? null,
        }),
      )
      return rows.map(deadRowFrom)
    },
    async countDead(req: CountDeadRequest): Promise<number> {
      const sql = sqliteStatements(req.table)
      const rows = db.read('counting dead messages', () =>
        db.all(sql.countDead, { topics: list(req.topics), search: req.search ?? null, cap: req.cap }),
      )
      return Number(rows[0]?.n ?? 0)
    },
    async blockedKeys(req: BlockedKeysRequest): Promise<BlockedKeyRow[]> {
      const sql = sqliteStatements(req.table)
      const rows = db.read('listing blocked keys', () =>
        db.all(sql.blockedKeys, {
          continue_topics: JSON.stringify(req.continueAfterDead),
          topics: list(req.topics),
          after_key: req.afterKey ?? null,
          limit: req.limit,
          include_retrying: req.includeRetrying,
        }),
      )
      return rows.map(blockedKeyRowFrom)
    },
  }
}

/** The in-process wake: a commit of a producer in this process wakes the relays listening here. */
async function listenInProcess(channel: string, handlers: WakeHandlers): Promise<WakeSubscription> {
  const off = listenSqliteWake(channel, () => handlers.onWake())
  handlers.onConnect?.()
  return {
    async close() {
      off()
    },
  }
}

/**
 * Builds an {@link OutboxBackend} for SQLite from a {@link SqliteExecutor}, using core's SQL.
 *
 * SQLite has one writer at a time, so claims are disjoint by construction: each claim is one
 * `UPDATE ... RETURNING` (attempts at claim, the lease in `available_at`, dead-letter at claim) in
 * a short `BEGIN IMMEDIATE` transaction, committed before `claim` returns. Settles are batched
 * and fenced by attempts, like on PostgreSQL. Waiting for the write lock never blocks the event
 * loop: the backend retries every few milliseconds, up to {@link SqliteExecutor.lockTimeoutMs}.
 *
 * A shared connection: when the executor's connection is inside someone else's open transaction,
 * `claim` returns no rows (the next poll or wake claims them), and the other writes wait until
 * that transaction ends. `listen` is the in-process wake: relays in the producers' process react
 * right after a commit, others poll.
 */
export function createSqliteBackend(executor: SqliteExecutor): OutboxBackend {
  const db = sqliteRunner(executor)
  return {
    name: executor.name,
    dialect: 'sqlite',
    async migrate(outbox: Outbox) {
      await db.write(`migrate of table ${outbox.table.display}`, () =>
        executor.exec(sqliteStatements(outbox.table).migrate),
      )
    },
    claim: sqliteClaim(db),
    settle: sqliteSettle(db),
    extendLease: sqliteExtendLease(db),
    ...sqliteAdminWrites(db),
    ...sqliteListings(db),
    ...sqliteInboxBackend(executor, db),
    listen: listenInProcess,
    close: () => executor.close(),
  }
}
