import type { Outbox } from '../../outbox/define-outbox.js'
import type {
  ClaimedRow,
  ClaimRequest,
  ExtendLeaseRequest,
  OutboxBackend,
  SettleRequest,
} from '../../protocol/backend.js'
import { messageFieldsFrom, num, text, textOrNull, truthy } from '../../protocol/backend-rows.js'
import { mysqlAdminWrites, mysqlListings } from './admin-backend.js'
import { mysqlInboxBackend } from './inbox-backend.js'
import { type MysqlRunner, microseconds, mysqlRunner } from './runner.js'
import { mysqlStatements } from './statements.js'

/** What a MySQL statement returns: its rows (empty for a write) and its affected-row count (0 for a read). */
export interface MysqlResult {
  readonly rows: Record<string, unknown>[]
  readonly affectedRows: number
}

/**
 * Runs one statement with `?` placeholders. `params` holds only strings, numbers and `null`:
 * list sizes are part of the SQL text.
 */
export type MysqlQuery = (sql: string, params: readonly unknown[]) => Promise<MysqlResult>

/**
 * The small slice of a MySQL/MariaDB driver a relay backend needs. `@outboxkit/mysql` implements
 * it for mysql2; core turns it into a full {@link OutboxBackend} with {@link createMysqlBackend}.
 */
export interface MysqlExecutor {
  /** Driver name for error messages, e.g. `'mysql'`. */
  readonly name: string
  /** Runs one statement outside any transaction (autocommit) on any connection. */
  query: MysqlQuery
  /**
   * Runs `fn` inside one transaction on one connection, at isolation level READ COMMITTED (so
   * the claim's locking reads take no gap locks that would stall producers): `SET TRANSACTION
   * ISOLATION LEVEL READ COMMITTED`, `START TRANSACTION`, `fn`, `COMMIT`; `ROLLBACK` (or a
   * dropped connection) when `fn` or a statement fails.
   */
  transaction<T>(fn: (query: MysqlQuery) => Promise<T>): Promise<T>
  /** Releases what the executor created itself (never a user's pool). */
  close(): Promise<void>
}

const sortedUnique = (ids: readonly string[]): string[] => [...new Set(ids)].sort()

/** The `last_error` the claim writes when it dead-letters a row (the same text as the SQL builds). */
function deadAtClaimError(attempts: number, maxAttempts: number, previous: string | null): string {
  return `lease expired after attempt ${attempts} of ${maxAttempts} without a result (the relay crashed or the handler hung)${
    previous === null ? '' : `; previous error: ${previous}`
  }`
}

/** Ids among `rows` still processing with their claimed attempts, locked until commit. */
async function fence(
  query: MysqlQuery,
  table: ClaimRequest['table'],
  rows: readonly { id: string; attempts: number }[],
): Promise<Set<string>> {
  const ids = sortedUnique(rows.map((r) => r.id))
  const sql = mysqlStatements(table)
  const { rows: locked } = await query(sql.lockProcessing(ids.length), ids)
  const current = new Map(locked.map((r) => [text(r.id), num(r.attempts)]))
  const ok = new Set<string>()
  for (const r of rows) if (current.get(r.id) === r.attempts) ok.add(r.id)
  return ok
}

/** A row of the claim's locking read as claimed: the attempt counted, or dead-lettered. */
function claimedRow(r: Record<string, unknown>, maxAttempts: number, ordered: boolean): ClaimedRow {
  const attempts = num(r.attempts)
  const previous = textOrNull(r.last_error)
  const isDead = attempts >= maxAttempts
  return {
    ...messageFieldsFrom(r),
    attempts: isDead ? attempts : attempts + 1,
    createdAtMs: num(r.created_ms),
    state: isDead ? 'dead' : 'processing',
    lastError: isDead ? deadAtClaimError(attempts, maxAttempts, previous) : previous,
    ...(ordered && truthy(r.ordered) ? { ordered: true } : {}),
  }
}

/** `claim`: the locking read of the due rows, then their lease and dead-letter writes, in one transaction. */
function mysqlClaim(db: MysqlRunner): OutboxBackend['claim'] {
  return async (req: ClaimRequest): Promise<ClaimedRow[]> => {
    if (req.topics.length === 0 || req.limit < 1) return []
    const sql = mysqlStatements(req.table)
    const ordered = req.ordering !== undefined
    const continueAfterDead = req.ordering?.continueAfterDead ?? []
    const select = sql.claimSelect(
      req.topics.length,
      Math.floor(req.limit),
      ordered ? continueAfterDead.length : undefined,
    )
    const params = ordered ? [...req.topics, ...continueAfterDead] : [...req.topics]
    return db.transaction('claim', async (query) => {
      const { rows } = await query(select, params)
      if (rows.length === 0) return []
      const live: string[] = []
      const dead: string[] = []
      for (const r of rows) (num(r.attempts) >= req.maxAttempts ? dead : live).push(text(r.id))
      if (live.length > 0) await query(sql.claimProcessing(live.length), [microseconds(req.leaseMs), ...live])
      if (dead.length > 0) await query(sql.claimDead(dead.length), [req.maxAttempts, ...dead])
      return rows.map((r) => claimedRow(r, req.maxAttempts, ordered))
    })
  }
}

/** `settle`: the fence read, then one DELETE and one UPDATE of the rows it let through. */
function mysqlSettle(db: MysqlRunner): OutboxBackend['settle'] {
  return async (req: SettleRequest): Promise<string[]> => {
    if (req.settlements.length === 0) return []
    const sql = mysqlStatements(req.table)
    return db.transaction('settle', async (query) => {
      const ok = await fence(query, req.table, req.settlements)
      if (ok.size === 0) return []
      const remove: string[] = []
      const update: unknown[][] = [[], [], []]
      const updated: string[] = []
      const seen = new Set<string>()
      for (const s of req.settlements) {
        if (!ok.has(s.id) || seen.has(s.id)) continue
        seen.add(s.id)
        if (s.outcome === 'delivered' && !req.keepDelivered) {
          remove.push(s.id)
          continue
        }
        updated.push(s.id)
        update[0]!.push(s.id, s.outcome === 'retry' ? 'pending' : s.outcome)
        update[1]!.push(s.id, s.outcome === 'retry' ? microseconds(s.delayMs) : 0)
        update[2]!.push(s.id, s.outcome === 'delivered' ? null : s.error)
      }
      if (remove.length > 0) await query(sql.deleteIds(remove.length), remove)
      if (updated.length > 0) await query(sql.settleUpdate(updated.length), [...update.flat(), ...updated])
      return [...seen]
    })
  }
}

/** `extendLease`: the fence read, then one UPDATE of the rows it let through. */
function mysqlExtendLease(db: MysqlRunner): NonNullable<OutboxBackend['extendLease']> {
  return async (req: ExtendLeaseRequest): Promise<string[]> => {
    if (req.rows.length === 0) return []
    const sql = mysqlStatements(req.table)
    return db.transaction('lease extension', async (query) => {
      const ok = [...(await fence(query, req.table, req.rows))]
      if (ok.length > 0) await query(sql.extendLease(ok.length), [microseconds(req.leaseMs), ...ok])
      return ok
    })
  }
}

/**
 * Builds an {@link OutboxBackend} for MySQL 8+ and MariaDB 10.6+ from a {@link MysqlExecutor},
 * using core's SQL. The same rules as PostgreSQL, with MySQL's means:
 * - **claim**: one short READ COMMITTED transaction: `SELECT ... FOR UPDATE SKIP LOCKED` of the due
 *   rows in `(available_at, id)` order, then one `UPDATE` that counts the attempt and writes the
 *   lease (and one that dead-letters rows that already used `maxAttempts`), `COMMIT`, return.
 * - **settle** and **extendLease**: one transaction that locks the rows still `processing` with
 *   the claimed `attempts` (the fence), then writes only those: batched, and the ids returned are
 *   exactly the ones that took effect (MySQL has no `UPDATE ... RETURNING`).
 * - **purge**, **redrive** and **discard**: one statement in a transaction of its own.
 * - **deadlocks**: a transaction (or autocommit statement) that InnoDB rolled back as a deadlock
 *   victim (`ER_LOCK_DEADLOCK`, 1213) is run again from the start, up to
 *   {@link MYSQL_DEADLOCK_ATTEMPTS} times in all with a short jittered backoff; fences are read
 *   again by each run, so they stay exact. PostgreSQL's claim and settle never report one.
 * - No `listen`: MySQL has no LISTEN/NOTIFY, so relays poll (`pollIntervalMs` is the latency).
 */
export function createMysqlBackend(executor: MysqlExecutor): OutboxBackend {
  const db = mysqlRunner(executor)
  return {
    name: executor.name,
    dialect: 'mysql',
    async migrate(outbox: Outbox) {
      const sql = mysqlStatements(outbox.table)
      for (const statement of sql.migrate(outbox.orderedTopics.size > 0))
        await db.run(`migrate of table ${outbox.table.display}`, statement, [])
    },
    claim: mysqlClaim(db),
    settle: mysqlSettle(db),
    extendLease: mysqlExtendLease(db),
    ...mysqlAdminWrites(db),
    ...mysqlListings(db),
    ...mysqlInboxBackend(db),
    close: () => executor.close(),
  }
}
