import { OutboxError } from '@outboxkit/core'
import { formatValue } from '@outboxkit/core/adapter'

/** The adapter name in error messages: `[outboxkit] [prisma] ...`. */
export const ADAPTER = 'prisma'

/**
 * The part of a Prisma interactive-transaction client (the `tx` of
 * `prisma.$transaction(async (tx) => ...)`, typed `Prisma.TransactionClient` by your generated
 * client) that `publish` uses.
 *
 * Prisma removes `$connect`, `$disconnect`, `$on`, `$use` and `$extends` from a transaction client
 * (its public `ITXClientDenyList`), so a root `PrismaClient`, or a `$extends()` client, does not
 * type-check here: pass the `tx` instead.
 */
export interface PrismaTransactionClient {
  $queryRawUnsafe<T = unknown>(query: string, ...values: any[]): PromiseLike<T>
  /** Used on MySQL / MariaDB, where a write returns its affected-row count rather than rows. */
  $executeRawUnsafe(query: string, ...values: any[]): PromiseLike<number>
  /** Absent on a transaction client; present on a root or `$extends()` client, which is refused. */
  $connect?: never
  /** Absent on a transaction client; present on a root or `$extends()` client, which is refused. */
  $disconnect?: never
}

/**
 * Prisma >= 7.5 marks every interactive-transaction client (and every nested `tx.$transaction`
 * client) with this symbol: `{ kind: 'nested', txId, scopeId, scopeState: { stack } }`. While a
 * transaction scope is open its `scopeId` is on `stack`; Prisma pops it when the scope commits or
 * rolls back (and empties the stack when scopes close out of order, which rolls everything back).
 */
const SCOPE_CONTEXT = Symbol.for('prisma.client.transaction.scope_context')
/** Prisma 7.0 - 7.4 marks an interactive-transaction client with its transaction id (a string). */
const LEGACY_TRANSACTION_ID = Symbol.for('prisma.client.transaction.id')

interface ScopeContext {
  kind: 'nested'
  txId: string
  scopeId: string
  scopeState: { stack: unknown[] }
}

function isScopeContext(value: unknown): value is ScopeContext {
  if (!value || typeof value !== 'object') return false
  const v = value as Partial<ScopeContext>
  return (
    v.kind === 'nested' &&
    typeof v.txId === 'string' &&
    typeof v.scopeId === 'string' &&
    !!v.scopeState &&
    Array.isArray(v.scopeState.stack)
  )
}

/**
 * Whether the database transaction of a checked transaction client is still open, from Prisma's
 * scope marker (7.5+): some scope of it is still on the stack. Prisma pops the outermost scope
 * only after its COMMIT or ROLLBACK finished. `false` on Prisma 7.0 - 7.4 (no scope state). Used to
 * wake SQLite relays of this process once the publishing transaction ended.
 */
export function isPrismaTransactionOpen(tx: PrismaTransactionClient): boolean {
  const scope = read(tx, SCOPE_CONTEXT)
  return isScopeContext(scope) && scope.scopeState.stack.length > 0
}

/**
 * A `NOT_IN_TRANSACTION` error naming what `publish` got. `what` completes "got ...".
 */
export function notInTransaction(what: string, options: { cause?: unknown } = {}): OutboxError {
  return new OutboxError(
    'NOT_IN_TRANSACTION',
    `publish needs a Prisma interactive-transaction client, got ${what}. Call it with the tx of prisma.$transaction(async (tx) => { ...; await publish(outbox, tx, message) }). Nothing was written.`,
    { source: ADAPTER, ...options },
  )
}

function read(handle: object, key: PropertyKey): unknown {
  // Direct reads only: Prisma's client proxies throw on ownKeys (Object.getOwnPropertySymbols).
  return (handle as Record<PropertyKey, unknown>)[key]
}

/**
 * Returns `handle` when it is an open Prisma interactive-transaction client, else throws
 * `OutboxError('NOT_IN_TRANSACTION')`. Reads only in-memory state: no round trip, nothing written.
 *
 * Accepted: a client carrying Prisma's own transaction marker (7.5+: the scope context symbol;
 * 7.0 - 7.4: the transaction id symbol) and lacking `$connect`/`$disconnect`, which Prisma strips
 * from transaction clients. On 7.5+ the scope must still be open: an escaped `tx` (kept after its
 * `$transaction` finished) or an escaped nested `tx` (after its savepoint was released or rolled
 * back, while the outer transaction goes on) is refused here, before anything is sent.
 */
export function checkPrismaTransaction(handle: unknown): PrismaTransactionClient {
  if (!handle || (typeof handle !== 'object' && typeof handle !== 'function'))
    throw notInTransaction(formatValue(handle))
  const scope = read(handle, SCOPE_CONTEXT)
  const legacyId = read(handle, LEGACY_TRANSACTION_ID)
  const rootApi =
    typeof read(handle, '$connect') === 'function' || typeof read(handle, '$disconnect') === 'function'
  if (scope === undefined && legacyId === undefined) {
    if (rootApi && typeof read(handle, '$transaction') === 'function') {
      throw notInTransaction(
        'a PrismaClient (the root client or a $extends() client), which runs each query on its own in autocommit, so the message would commit even if your transaction rolled back',
      )
    }
    throw notInTransaction(
      typeof read(handle, '$queryRawUnsafe') === 'function'
        ? "an object with $queryRawUnsafe but without Prisma's interactive-transaction marker (supported: Prisma 7.x)"
        : formatValue(handle),
    )
  }
  if (rootApi) {
    // Prisma removes $connect/$disconnect from every transaction client; this one has them.
    throw notInTransaction('a Prisma client that has $connect/$disconnect, so it is not a transaction client')
  }
  if (scope !== undefined) {
    if (!isScopeContext(scope)) {
      throw notInTransaction(
        'a Prisma client with a transaction marker this version of @outboxkit/prisma does not recognise',
      )
    }
    if (!scope.scopeState.stack.includes(scope.scopeId)) {
      throw notInTransaction(
        scope.scopeState.stack.length === 0
          ? 'a transaction client whose $transaction already finished (committed or rolled back): it was kept and used after its callback returned'
          : 'a nested $transaction client whose scope already finished (its savepoint was released or rolled back): a message published on it would land in the outer transaction instead',
      )
    }
  } else if (typeof legacyId !== 'string') {
    throw notInTransaction(
      'a Prisma client with a transaction marker this version of @outboxkit/prisma does not recognise',
    )
  }
  if (typeof read(handle, '$queryRawUnsafe') !== 'function') {
    throw notInTransaction('a Prisma transaction client without $queryRawUnsafe')
  }
  return handle as PrismaTransactionClient
}
