/**
 * Identifiers in the double-quoted SQL standard form that PostgreSQL and SQLite share, and the
 * index names every dialect derives from the table name.
 */
import type { TableRef } from '../outbox/define-outbox.js'

/** Quotes a validated identifier (PostgreSQL and SQLite: double quotes). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/** The quoted, schema-qualified table name. */
export function qualifiedTable(table: TableRef): string {
  return table.schema ? `${quoteIdent(table.schema)}.${quoteIdent(table.name)}` : quoteIdent(table.name)
}

/** The names of the outbox table's indexes, as `migrate` and {@link outboxDdl} create them. */
export interface OutboxIndexNames {
  /** Partial index on `(available_at, id)` for pending and processing rows: serves the claim. */
  readonly due: string
  /** Partial unique index on `dedup_key`: backs producer-side deduplication. */
  readonly dedupKey: string
  /**
   * Partial index on `(key, seq)` for rows of ordered topics that are not delivered: serves the
   * claim's head-of-key check (see docs/ordering.md).
   */
  readonly keySeq: string
  /**
   * Partial index on `(available_at, topic)` of dead rows: serves the dead-letter listing, search and
   * count (the dashboard) without reading delivered rows.
   */
  readonly dead: string
  /** The sequence that numbers messages of ordered topics (a sequence, not an index; owned by the `seq` column). */
  readonly sequence: string
}

/**
 * The index names of an outbox table (unquoted), for ORM schema definitions that must match
 * core's DDL. Derived names stay under PostgreSQL's 63-byte limit, so the two never truncate to
 * one name.
 */
export function outboxIndexNames(table: TableRef): OutboxIndexNames {
  const derive = (suffix: string) => `${table.name.slice(0, 63 - suffix.length - 1)}_${suffix}`
  return {
    due: derive('due_idx'),
    dedupKey: derive('dedup_key_idx'),
    keySeq: derive('key_seq_idx'),
    dead: derive('dead_idx'),
    sequence: derive('seq_seq'),
  }
}

/**
 * The name of an inbox table's index on `(consumer, processed_at)` (unquoted), which serves
 * purge and stats; under 63 bytes like {@link outboxIndexNames}.
 */
export function inboxIndexName(table: TableRef): string {
  const suffix = 'processed_at_idx'
  return `${table.name.slice(0, 63 - suffix.length - 1)}_${suffix}`
}
