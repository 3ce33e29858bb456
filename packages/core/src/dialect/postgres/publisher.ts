import type { Inbox } from '../../outbox/define-inbox.js'
import type { Outbox } from '../../outbox/define-outbox.js'
import type { PreparedMessage, PublishResult } from '../../outbox/message.js'
import { createPublishPipeline } from '../../protocol/publish-pipeline.js'
import type { Publisher } from '../../protocol/publisher.js'
import {
  isPostgresPublishRefused,
  type PostgresPublishStatement,
  postgresPublishStatement,
  readPostgresPublishResult,
} from './publish-statement.js'
import { postgresInboxStatements } from './statements/inbox.js'
import type { POSTGRES_TRANSACTION_MARKER } from './statements.js'
import { postgresWalPublishStatement, takesWalPath, walPublishResult } from './wal/publish.js'

/** What an adapter tells {@link createPostgresPublisher} about its driver or ORM. */
export interface PostgresPublisherSpec<TTx> {
  /** Adapter name used in error messages, e.g. `'kysely'`. */
  readonly name: string
  /**
   * Returns `handle` as a transaction, or throws `OutboxError('NOT_IN_TRANSACTION')` unless it is
   * an open transaction, judged by the library's own public signal. MUST NOT write anything.
   */
  checkTransaction(handle: unknown): TTx | Promise<TTx>
  /** Runs the statement on the transaction's own connection and returns the result rows. */
  execute(handle: TTx, statement: PostgresPublishStatement): Promise<readonly Record<string, unknown>[]>
  /**
   * The adapter sends {@link POSTGRES_TRANSACTION_MARKER} on the same connection right before
   * the statement (pipelined where the driver can), and wants the guarded statement, which
   * writes nothing unless the marker's transaction is still open. `refuse` builds the error then.
   */
  guarded?: { refuse(): Error }
}

/**
 * Builds an adapter's `publish`, `publishMany` and `processOnce` for PostgreSQL on the one publish pipeline
 * (validate, check the transaction, trace, write, map errors): every message, and the relay's
 * NOTIFY wake-up, is written with one statement on the caller's transaction; with
 * `transport: 'wal'`, into the write-ahead log (`pg_logical_emit_message`, docs/wal.md). Nothing is written
 * when a check fails. With `@opentelemetry/api` installed, the statement runs in a PRODUCER span
 * whose W3C `traceparent` goes into each message's headers (see docs/operations.md, "Tracing").
 */
export function createPostgresPublisher<TTx>(spec: PostgresPublisherSpec<TTx>): Publisher<TTx> {
  const guarded = spec.guarded
  return createPublishPipeline<TTx>({
    name: spec.name,
    checkTransaction: (handle) => spec.checkTransaction(handle),
    write(outbox: Outbox, tx: TTx, prepared: PreparedMessage[]): Promise<PublishResult[]> {
      if (takesWalPath(outbox, prepared)) {
        const wal = postgresWalPublishStatement(outbox, prepared, guarded !== undefined)
        return spec.execute(tx, wal).then((rows) => {
          if (guarded && isPostgresPublishRefused(rows)) throw guarded.refuse()
          return walPublishResult(outbox, prepared, rows, spec.name, wal)
        })
      }
      const statement = postgresPublishStatement(outbox, prepared, { guarded: guarded !== undefined })
      return spec.execute(tx, statement).then((rows) => {
        if (guarded && isPostgresPublishRefused(rows)) throw guarded.refuse()
        return readPostgresPublishResult(prepared, rows)
      })
    },
    claimInbox(inbox: Inbox, tx: TTx, id: string): Promise<boolean> {
      const sql = postgresInboxStatements(inbox.table)
      const statement: PostgresPublishStatement = {
        text: guarded ? sql.claimGuarded : sql.claim,
        values: [inbox.consumer, id],
        name: guarded ? 'outboxkit_inbox_claim_guarded' : 'outboxkit_inbox_claim',
      }
      return spec.execute(tx, statement).then((rows) => {
        if (guarded && isPostgresPublishRefused(rows)) throw guarded.refuse()
        return rows.some((r) => r.inserted === true || r.inserted === 't')
      })
    },
  })
}
