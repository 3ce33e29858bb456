import type { TableRef } from '../../outbox/define-outbox.js'
import { postgresAdminStatements } from './statements/admin.js'
import { postgresClaimStatements } from './statements/claim.js'
import { postgresDdlStatements } from './statements/ddl.js'
import { postgresPublishStatements } from './statements/publish.js'
import { postgresSettleStatements } from './statements/settle.js'
import { postgresTable } from './statements/table.js'

// Every SQL statement of PostgreSQL is written in ./statements/, one file per concept (ddl,
// publish, claim, settle, admin); this file is their one entry point, cached per table.

export { OUTBOX_STORAGE_PARAMETERS } from './statements/ddl.js'
export { POSTGRES_NOT_IN_TRANSACTION, POSTGRES_TRANSACTION_MARKER } from './statements/publish.js'

/** Every SQL statement outboxkit runs on PostgreSQL for one table. Parameters are positional. */
export interface PostgresStatements {
  /** Idempotent DDL (multi-statement), for users' migration tools. */
  readonly ddl: string
  /** `ddl` behind a transaction-scoped advisory lock, so concurrent `migrate` calls do not race. */
  readonly migrate: string
  /** Publish one message: $1 id, $2 topic, $3 key, $4 payload json text, $5 headers json text, $6 delay ms, $7 dedup key, $8 channel (or '' for no wake). Rows: (id, inserted). */
  readonly publishOne: string
  /** Publish many: $1..$7 arrays of the same, $8 channel. Rows: (id, dedup_key, inserted). */
  readonly publishMany: string
  /**
   * `publishOne` that writes (and wakes) only while {@link POSTGRES_TRANSACTION_MARKER}, sent
   * just before on the same connection, is still in force; otherwise it writes nothing and returns
   * one row whose `dedup_key` is {@link POSTGRES_NOT_IN_TRANSACTION}.
   */
  readonly publishOneGuarded: string
  /** `publishMany`, guarded like {@link PostgresStatements.publishOneGuarded}. */
  readonly publishManyGuarded: string
  /**
   * `publishOne` for a message without a `dedupKey` (same parameters, same rows): a plain
   * INSERT, without `ON CONFLICT` (whose speculative insertion costs a lock and a WAL record per
   * row) and without the lookup of an existing `dedupKey`.
   */
  readonly publishOnePlain: string
  /** `publishMany` for messages none of which has a `dedupKey`, plain like {@link PostgresStatements.publishOnePlain}. */
  readonly publishManyPlain: string
  /** `publishOneGuarded` for a message without a `dedupKey`: no `ON CONFLICT`, no lookup of an existing `dedupKey`. */
  readonly publishOneGuardedPlain: string
  /** `publishManyGuarded` for messages none of which has a `dedupKey`, like {@link PostgresStatements.publishOneGuardedPlain}. */
  readonly publishManyGuardedPlain: string
  /** $1 topics[], $2 limit, $3 lease ms, $4 max attempts. */
  readonly claim: string
  /**
   * $1 ids[], $2 attempts[], $3 outcomes[], $4 delay ms[], $5 errors[], $6 keep delivered. Rows:
   * the ids whose settlement did not apply (fenced out); usually none.
   */
  readonly settle: string
  /**
   * `settle` for a batch whose every outcome is `delivered`, with `keepDelivered: false` (the
   * common case): one fenced DELETE. $1 ids[], $2 attempts[]. Rows: the ids not applied.
   */
  readonly settleDelivered: string
  /** $1 ids[], $2 attempts[], $3 lease ms. */
  readonly extendLease: string
  /** $1 states[], $2 older than ms. */
  readonly purge: string
  /** $1 ids[] or null, $2 topics[] or null. */
  readonly redrive: string
  /**
   * Read-only counts by topic and state: $1 states[]. Rows: (topic, state, n, oldest_age_ms,
   * oldest_due_lag_ms).
   */
  readonly stats: string
  /**
   * Dead rows, newest death first: $1 topics[] or null, $2 limit, then the cursor: $3 `dead_ms`
   * and $4 `id` of the last row of the previous page (both null for the first page), $5 the
   * search text or null, $6 the same text when it is a UUID, else null.
   */
  readonly listDead: string
  /** Dead rows matching, at most $2: $1 topics[] or null, $3 search text or null, $4 it as a UUID or null. Rows: (n). */
  readonly countDead: string
  /** Deletes dead rows: $1 ids[] or null, $2 topics[] or null. */
  readonly discard: string
  /**
   * `publishOne` for a message of an ordered topic: takes the transaction-scoped advisory lock on
   * (table, key) first, then numbers the row from the table's sequence (`seq`). Same parameters.
   */
  readonly publishOneOrdered: string
  /** `publishMany` with ordered messages: $9 the ordered topics (text[]); their keys are locked in sorted order first. */
  readonly publishManyOrdered: string
  /** `publishOneOrdered`, guarded like {@link PostgresStatements.publishOneGuarded}. */
  readonly publishOneOrderedGuarded: string
  /** `publishManyOrdered`, guarded like {@link PostgresStatements.publishOneGuarded}. */
  readonly publishManyOrderedGuarded: string
  /**
   * `claim` that takes only the head of each key among ordered rows (`seq IS NOT NULL`): $1..$4 as
   * `claim`, $5 the topics whose dead messages do not block their key (text[]).
   */
  readonly claimOrdered: string
  /**
   * Keys of ordered rows whose head (lowest `seq` not delivered) is dead, or with $5 also
   * retrying: $1 topics whose dead messages do not block (text[]), $2 head topics[] or null,
   * $3 after key or null, $4 limit, $5 include retrying heads.
   */
  readonly blockedKeys: string
}

const cache = new Map<string, PostgresStatements>()

/** Builds (and caches) the PostgreSQL statements for a table. */
export function postgresStatements(table: TableRef): PostgresStatements {
  // Looked up on every publish, claim and settle: the key is all that is computed on a hit.
  const hit = cache.get(`${table.schema ?? ''}.${table.name}`)
  if (hit) return hit
  const names = postgresTable(table)
  const statements: PostgresStatements = {
    ...postgresDdlStatements(names),
    ...postgresPublishStatements(names),
    ...postgresClaimStatements(names),
    ...postgresSettleStatements(names),
    ...postgresAdminStatements(names),
  }
  cache.set(names.cacheKey, statements)
  return statements
}
