import type {
  Inbox,
  InboxMessage,
  OutboxBackend,
  ProcessOnceFn,
  ProcessOnceResult,
  PublishFn,
  PublishManyFn,
} from '@outboxkit/core'
import type { OutboxDialect } from '../dialect-sql.js'

/** A handle `publish` must refuse, with a label for the test name. */
export interface RefusedHandle {
  label: string
  handle: unknown
}

/** What an adapter's test file gives {@link runPublishConformance}. */
export interface PublishHarness<TTx> {
  /** The adapter name as it appears in error messages: `[outboxkit] [name]`. */
  name: string
  /** A title for this run when an adapter runs the suite more than once (e.g. per driver). Default `name`. */
  label?: string
  publish: PublishFn<TTx>
  publishMany: PublishManyFn<TTx>
  /** The adapter's `processOnce`: with it, the suite also runs the inbox tests (`runInboxConformance`). */
  processOnce?: ProcessOnceFn<TTx>
  /** Opens whatever the adapter needs (ORM instance, pool, ...). Called once. */
  setup(): Promise<PublishContext<TTx>>
}

/** The library-specific operations the suite drives. */
export interface PublishContext<TTx> {
  /** The database's SQL dialect: how the suite writes its raw SQL. Default `'postgres'`. */
  dialect?: OutboxDialect
  /** Backend used to migrate the table and run a relay for delivery checks. */
  backend: OutboxBackend
  /**
   * Raw SQL on a separate connection (PGlite: the same instance, outside any transaction), written
   * for {@link PublishContext.dialect} with its own placeholders (`$1` PostgreSQL, `?` MySQL and
   * SQLite); returns plain rows.
   */
  inspect(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  /** Runs `fn` in a transaction through the library's own API: commit on resolve, rollback on throw. */
  transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T>
  /** A nested transaction (savepoint) inside `tx`: commit on resolve, roll back to the savepoint on throw. */
  savepoint?: <T>(tx: TTx, fn: (tx: TTx) => Promise<T>) => Promise<T>
  /** Handles that are not open transactions: pool / root db / autocommit connection / client... */
  refusedHandles(): Promise<RefusedHandle[]>
  /**
   * Escaped handles (kept after their transaction ended) that the adapter cannot recognise as
   * ended, with the reason; the suite then skips those checks and the docs must say so.
   */
  undetectableEscapes?: { afterCommit?: string; afterRollback?: string }
  /** Extra concurrency the library allows for the concurrent-publish test. Default 20. */
  concurrentTransactions?: number
  /**
   * The adapter's `inboxHandler(inbox, db, fn)` bound to the suite's database handle: the inbox
   * tests then check it opens a real transaction, commits the work once, and rolls back a throw.
   */
  inboxHandler?: (
    inbox: Inbox,
    fn: (message: InboxMessage, tx: TTx) => Promise<unknown>,
  ) => (message: InboxMessage) => Promise<ProcessOnceResult<unknown>>
  teardown(): Promise<void>
}
