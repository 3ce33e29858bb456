import type { TableRef } from '../../../outbox/define-outbox.js'

/** The names the WAL transport derives from an outbox table (docs/wal.md). */
export interface WalNames {
  /** The logical replication slot and the publication pgoutput reads it through: `outboxkit_<schema_><table>`. */
  readonly slot: string
  /** The prefix of the table's messages in `pg_logical_emit_message`: `outboxkit:<schema>.<table>`. */
  readonly prefix: string
  /** The table of the slot's dispatch mark, in the outbox table's schema: `<table>_wal`. */
  readonly markTable: string
}

function fnv(text: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0).toString(16).padStart(8, '0')
}

/**
 * The slot, publication and message prefix of `table`. Slot names allow only lower-case letters,
 * digits and `_` (63 at most): the table's name is folded to lower case, and a name that would be
 * longer is cut and given a hash of the whole, so two tables never share a slot.
 */
export function walNames(table: TableRef): WalNames {
  const full = `outboxkit_${table.schema ? `${table.schema}_` : ''}${table.name}`.toLowerCase()
  const slot = full.length <= 63 ? full : `${full.slice(0, 54)}_${fnv(full)}`
  return {
    slot,
    prefix: `outboxkit:${table.schema ?? ''}.${table.name}`,
    markTable: `${table.name.slice(0, 59)}_wal`,
  }
}
