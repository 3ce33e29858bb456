import type { OutboxDialect } from '@outboxkit/core'

/** Raw SQL written for one dialect (its own placeholders), returning plain rows. */
export type InspectFn = (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>

/** The states of an outbox row. */
export type SeedState = 'pending' | 'processing' | 'delivered' | 'dead'

/** A row the tests write straight into an outbox table, bypassing publish. */
export interface SeedRow {
  /** Default `'t'`. */
  topic?: string
  key?: string | null
  /** Any JSON value, stored as `JSON.stringify(payload)`. Default `{}`. */
  payload?: unknown
  /** Raw JSON text to store instead of `payload` (e.g. a payload a topic schema refuses). */
  payloadText?: string
  /** Default `'pending'`. */
  state?: SeedState
  /** Default 0. */
  attempts?: number
  /** `available_at` relative to the database clock, in ms (negative: in the past). Default 0. */
  availableInMs?: number
  /** `created_at` relative to the database clock, in ms. Default: the column default (now). */
  createdInMs?: number
  lastError?: string | null
}

/** One outbox row read back through raw SQL, the same shape on every dialect. */
export interface OutboxRowRead {
  id: string
  topic: string
  key: string | null
  /** The payload as the database returns it as text (parse it to compare). */
  payload_text: string
  /** The headers as text. */
  headers_text: string
  state: string
  attempts: number
  dedup_key: string | null
  last_error: string | null
  /** `available_at` in epoch ms, truncated to the millisecond. */
  available_at_ms: number
  /** `created_at` in epoch ms, truncated to the millisecond. */
  created_at_ms: number
  /** `available_at - now()` in ms on the database clock (negative: due). */
  due_in_ms: number
  /** `available_at - created_at` in ms. */
  delay_ms: number
}

/** Which rows {@link OutboxSql.rows} and {@link OutboxSql.count} read. */
export interface RowFilter {
  id?: string
  topic?: string
  state?: string
}

/** Changes {@link OutboxSql.update} writes to one row. */
export interface RowChanges {
  topic?: string
  /** A number, or `'increment'` for `attempts + 1`. */
  attempts?: number | 'increment'
  lastError?: string | null
  /** `available_at = now + availableInMs` (database clock). */
  availableInMs?: number
  /** `available_at` copied exactly (to the microsecond) from the row with this id. */
  availableAtOf?: string
}

/** An index of the outbox table as the database describes it. */
export interface IndexInfo {
  name: string
  unique: boolean
  /** Indexed columns in order. */
  columns: string[]
  /** Whether the index is partial; `null` where the dialect has no partial indexes (MySQL). */
  partial: boolean | null
  /** The index definition (PostgreSQL `indexdef`, SQLite `CREATE INDEX` text); `null` on MySQL. */
  definition: string | null
  /**
   * MySQL: per column, the generation expression of a generated column (MySQL has no partial or
   * expression indexes on every version, so it indexes generated columns), or `null`.
   */
  generated?: (string | null)[]
}

/**
 * The raw SQL the conformance suites and the relay-semantics harness issue, written once per
 * dialect. Every method runs through the given inspector, never through the code under test.
 */
export interface OutboxSql {
  readonly dialect: OutboxDialect
  /** The `n`-th (1-based) positional placeholder: `$n` on PostgreSQL, `?` elsewhere. */
  param(n: number): string
  /** An identifier quoted for the dialect (`"x"`, or `` `x` `` on MySQL). */
  ident(name: string): string
  /** `count(*)` of the rows matching `filter`. */
  count(table: string, filter?: RowFilter): Promise<number>
  /** The rows matching `filter`, ordered by id. */
  rows(table: string, filter?: RowFilter): Promise<OutboxRowRead[]>
  /** The row with `id`, or undefined. */
  row(table: string, id: string): Promise<OutboxRowRead | undefined>
  /** Inserts `rows` in one statement; returns their ids (generated here, in order). */
  insert(table: string, rows: readonly SeedRow[]): Promise<string[]>
  /** Updates one row. */
  update(table: string, id: string, changes: RowChanges): Promise<void>
  /** The database clock, in epoch ms (with sub-millisecond precision where the dialect has it). */
  nowMs(): Promise<number>
  /** The indexes of `table`. */
  indexes(table: string): Promise<IndexInfo[]>
  /** Deletes every row of `table`. */
  clear(table: string): Promise<void>
  /** Drops `table` (and what the dialect's migrate creates beside it). */
  drop(table: string): Promise<void>
}
