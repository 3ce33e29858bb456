import type { Inbox } from '../../outbox/define-inbox.js'
import type { Outbox } from '../../outbox/define-outbox.js'
import { OutboxError } from '../../outbox/errors.js'
import type { PreparedMessage, PublishResult } from '../../outbox/message.js'
import { createPublishPipeline } from '../../protocol/publish-pipeline.js'
import type { Publisher } from '../../protocol/publisher.js'
import type { MysqlResult } from './backend.js'
import { toMysqlOutboxError } from './errors.js'
import { mysqlInboxStatements } from './statements/inbox.js'
import { MYSQL_MAX_ROWS_PER_INSERT, type MysqlStatements, mysqlStatements } from './statements.js'

/** One statement of a MySQL publish, for {@link MysqlPublisherSpec.execute}. */
export interface MysqlStatement {
  /** SQL text with `?` placeholders. */
  readonly sql: string
  /** Positional parameters: strings, numbers and `null`. */
  readonly params: unknown[]
  /** The statement writes (the INSERT of the messages, or the lock of ordered keys); `false` for a read. */
  readonly write: boolean
  /** The statement carries the guard of {@link MysqlPublisherSpec.guard}. */
  readonly guarded: boolean
}

/** What an adapter tells {@link createMysqlPublisher} about its driver or ORM. */
export interface MysqlPublisherSpec<TTx> {
  /** Adapter name used in error messages, e.g. `'mysql'`. */
  readonly name: string
  /**
   * Returns `handle` as a transaction, or throws `OutboxError('NOT_IN_TRANSACTION')` unless it is
   * an open transaction, judged by the library's own public signal. MUST NOT write anything.
   */
  checkTransaction(handle: unknown): TTx | Promise<TTx>
  /** Runs the statement on the transaction's own connection and returns its rows and affected-row count. */
  execute(tx: TTx, statement: MysqlStatement): Promise<MysqlResult>
  /**
   * Optional, for drivers that cannot tell client-side whether their connection is inside a
   * transaction: a boolean SQL expression (e.g. `MARIADB_TRANSACTION_GUARD`) that every write
   * statement carries, so the server writes nothing unless it holds. `execute` must then
   * recognise a guarded statement that wrote nothing because the guard was false (for mysql2,
   * from the status flags of the statement's OK packet) and throw `NOT_IN_TRANSACTION`.
   * `undefined` for this transaction: no guard.
   */
  guard?(tx: TTx): string | undefined
  /**
   * Optional: the object that stands for the database connection of `tx` (for mysql2, its
   * connection object). Publishes of ordered messages on one connection run one at a time, keyed
   * by it (see {@link createMysqlPublisher}). Default: the handle given to `publish`.
   */
  connectionOf?(tx: TTx): object | undefined
}

/** MySQL's "table doesn't exist". */
const ER_NO_SUCH_TABLE = 1146

/** A JS string as the server stores it (UTF-8: a lone surrogate becomes U+FFFD), to match rows read back. */
const stored = (s: string): string => Buffer.from(s, 'utf8').toString('utf8')

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/** Runs one statement of a publish on the caller's transaction. */
type MysqlRun = (statement: MysqlStatement) => Promise<MysqlResult>

/** `err` of the upsert of ordered keys, as thrown: `INVALID_CONFIG` when the keys table does not exist. */
function keysUpsertError(err: unknown, keysTable: string, source: string): unknown {
  if ((err as { errno?: unknown } | null)?.errno !== ER_NO_SUCH_TABLE) return err
  return new OutboxError(
    'INVALID_CONFIG',
    `ordered topics need the table ${keysTable}, which does not exist: run migrate(outbox, backend) with this outbox (it declares orderedTopics), or add mysqlOutboxDdl(outbox) to your migrations. Nothing was written.`,
    { cause: err, source },
  )
}

/**
 * Per message its `seq` (null for a message of an unordered topic or without a key): the numbers
 * reserved for each of the sorted `keys`, from `last` (the key's last number after the
 * reservation) minus its count plus one, onwards, in the order of `messages`.
 */
function numberMessages(
  outbox: Outbox,
  messages: readonly PreparedMessage[],
  keys: readonly string[],
  counts: ReadonlyMap<string, number>,
  last: ReadonlyMap<string, number>,
  keysTable: string,
): (number | null)[] {
  const next = new Map<string, number>()
  for (const k of keys) {
    const top = last.get(stored(k))
    if (top === undefined || !Number.isFinite(top)) {
      throw new Error(`the ordered key ${JSON.stringify(k)} has no row in ${keysTable} after its upsert`)
    }
    next.set(k, top - counts.get(k)! + 1)
  }
  return messages.map((m) => {
    if (!outbox.orderedTopics.has(m.topic) || m.key === null) return null
    const n = next.get(m.key)!
    next.set(m.key, n + 1)
    return n
  })
}

/**
 * Reserves the numbers of the ordered messages: one upsert of their keys' rows in the companion
 * table (which locks each key to commit), then one SELECT of the numbers; per message its `seq`.
 */
async function reserveOrderedSeqs(
  outbox: Outbox,
  sql: MysqlStatements,
  messages: readonly PreparedMessage[],
  run: MysqlRun,
  guard: string | undefined,
  source: string,
): Promise<(number | null)[]> {
  const guarded = guard !== undefined && guard !== ''
  // Per key, how many messages of this batch; numbers are reserved by adding that count to the
  // key's row, whose lock is held until the caller's transaction ends.
  const counts = new Map<string, number>()
  for (const m of messages) {
    if (outbox.orderedTopics.has(m.topic) && m.key !== null) counts.set(m.key, (counts.get(m.key) ?? 0) + 1)
  }
  const keys = [...counts.keys()].sort()
  for (const part of chunks(keys, MYSQL_MAX_ROWS_PER_INSERT)) {
    try {
      await run({
        sql: sql.lockKeys(part.length, guard),
        params: part.flatMap((k) => [k, counts.get(k)!]),
        write: true,
        guarded,
      })
    } catch (err) {
      throw keysUpsertError(err, sql.keysTable, source)
    }
  }
  const last = new Map<string, number>()
  for (const part of chunks(keys, MYSQL_MAX_ROWS_PER_INSERT)) {
    const { rows } = await run({ sql: sql.keySeqs(part.length), params: part, write: false, guarded: false })
    for (const r of rows) last.set(String(r.key), Number(r.seq))
  }
  return numberMessages(outbox, messages, keys, counts, last, sql.keysTable)
}

/**
 * The results of a publish whose messages have dedup keys: one locking SELECT of `(id, dedup_key)`
 * tells which were published and the id of the existing message otherwise.
 */
async function dedupResults(
  sql: MysqlStatements,
  messages: readonly PreparedMessage[],
  dedupKeys: readonly string[],
  run: MysqlRun,
): Promise<PublishResult[]> {
  const holder = new Map<string, string>()
  for (const part of chunks(dedupKeys, MYSQL_MAX_ROWS_PER_INSERT)) {
    const { rows } = await run({
      sql: sql.dedupLookup(part.length),
      params: part,
      write: false,
      guarded: false,
    })
    for (const r of rows) holder.set(String(r.dedup_key), String(r.id))
  }
  return messages.map((m) => {
    if (m.dedupKey === null) return { id: m.id, published: true }
    const id = holder.get(stored(m.dedupKey))
    return id === m.id ? { id, published: true } : { id: id ?? m.id, published: false }
  })
}

/**
 * Writes `messages` on one transaction through `run`, with as few statements as MySQL allows:
 * - one INSERT (multi-row, `ON DUPLICATE KEY UPDATE id = id` so a taken `dedupKey` is a no-op)
 *   for up to {@link MYSQL_MAX_ROWS_PER_INSERT} messages;
 * - only when some message has a `dedupKey`: one locking SELECT of `(id, dedup_key)` to tell which
 *   were published and the id of the existing message otherwise (the rules of
 *   `readPostgresPublishResult`);
 * - only when some message is of an ordered topic, first: one upsert of its keys' rows in the
 *   companion table, which locks each key to commit and reserves its numbers, then one SELECT of
 *   the numbers (docs/ordering.md).
 *
 * `options.guard` (see {@link MysqlPublisherSpec.guard}) goes into every write statement;
 * `options.source` names the adapter in errors.
 *
 * Reserving and reading an ordered key's numbers are two statements: two calls with ordered
 * messages must not run at once on one transaction, or both read the same numbers.
 * {@link createMysqlPublisher} runs them one at a time per connection.
 */
export async function writeMysqlMessages(
  outbox: Outbox,
  messages: readonly PreparedMessage[],
  run: (statement: MysqlStatement) => Promise<MysqlResult>,
  options: { guard?: string | undefined; source?: string } = {},
): Promise<PublishResult[]> {
  const { guard, source = 'core' } = options
  const sql = mysqlStatements(outbox.table)
  const guarded = guard !== undefined && guard !== ''
  const seqs =
    outbox.orderedTopics.size > 0 && messages.some((m) => outbox.orderedTopics.has(m.topic))
      ? await reserveOrderedSeqs(outbox, sql, messages, run, guard, source)
      : undefined
  const ordered = seqs !== undefined
  for (let start = 0; start < messages.length; start += MYSQL_MAX_ROWS_PER_INSERT) {
    const part = messages.slice(start, start + MYSQL_MAX_ROWS_PER_INSERT)
    const params: unknown[] = []
    for (let i = 0; i < part.length; i++) {
      const m = part[i]!
      params.push(m.id, m.topic, m.key, m.payload, m.headers, Math.round(m.delayMs * 1000), m.dedupKey)
      if (ordered) params.push(seqs[start + i])
    }
    await run({ sql: sql.insert({ rows: part.length, ordered, guard }), params, write: true, guarded })
  }
  const dedupKeys = [...new Set(messages.flatMap((m) => (m.dedupKey === null ? [] : [m.dedupKey])))]
  if (dedupKeys.length === 0) return messages.map((m) => ({ id: m.id, published: true }))
  return dedupResults(sql, messages, dedupKeys, run)
}

/** True when writing `messages` reserves numbers of ordered keys (see {@link writeMysqlMessages}). */
function hasOrderedKeys(outbox: Outbox, messages: readonly PreparedMessage[]): boolean {
  return (
    outbox.orderedTopics.size > 0 && messages.some((m) => m.key !== null && outbox.orderedTopics.has(m.topic))
  )
}

/**
 * Per connection, the end of its queue of publishes with ordered messages. Shared by every
 * publisher of the process, so two adapters (or an adapter's two publishers) on one connection
 * queue together too.
 */
const orderedQueues = new WeakMap<object, Promise<void>>()
const settled = () => {}

/** Runs `fn` after every earlier call on `connection` has finished (fulfilled or not). */
function oneAtATime<T>(connection: object, fn: () => Promise<T>): Promise<T> {
  const previous = orderedQueues.get(connection)
  const result = previous ? previous.then(fn) : fn()
  const tail = result.then(settled, settled)
  orderedQueues.set(connection, tail)
  void tail.then(() => {
    if (orderedQueues.get(connection) === tail) orderedQueues.delete(connection)
  })
  return result
}

/**
 * Builds an adapter's `publish`, `publishMany` and `processOnce` for MySQL 8+ and MariaDB 10.6+ on the one
 * publish pipeline (validate, check the transaction, trace, write, map errors): every message is
 * written on the caller's transaction with one INSERT (plus one SELECT when some message has a
 * `dedupKey`, and two statements first when some message is of an ordered topic). Nothing is
 * written when a check fails. With `@opentelemetry/api` installed, the statements run in a
 * PRODUCER span whose W3C `traceparent` goes into each message's headers. MySQL has no NOTIFY:
 * relays poll.
 *
 * Publishes with messages of ordered topics that run at once on one connection (e.g.
 * `Promise.all` on one transaction) are queued and run one after the other, in the order they
 * reach the database, so no two messages of a key get the same number; other publishes are not
 * queued.
 */
export function createMysqlPublisher<TTx>(spec: MysqlPublisherSpec<TTx>): Publisher<TTx> {
  const { name } = spec
  return createPublishPipeline<TTx>({
    name,
    checkTransaction: (handle) => spec.checkTransaction(handle),
    write(outbox: Outbox, tx: TTx, prepared: PreparedMessage[], handle: unknown): Promise<PublishResult[]> {
      const run = () =>
        writeMysqlMessages(outbox, prepared, (statement) => spec.execute(tx, statement), {
          guard: spec.guard?.(tx),
          source: name,
        })
      const connection =
        spec.connectionOf?.(tx) ?? (typeof handle === 'object' && handle !== null ? handle : undefined)
      return connection && hasOrderedKeys(outbox, prepared) ? oneAtATime(connection, run) : run()
    },
    async claimInbox(inbox: Inbox, tx: TTx, id: string): Promise<boolean> {
      const guard = spec.guard?.(tx)
      const guarded = guard !== undefined && guard !== ''
      const { affectedRows } = await spec.execute(tx, {
        sql: mysqlInboxStatements(inbox.table).claim(guarded ? guard : undefined),
        params: [inbox.consumer, id],
        write: true,
        guarded,
      })
      return affectedRows > 0
    },
    toError: toMysqlOutboxError,
  })
}
