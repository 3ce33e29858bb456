import type { Outbox, TableRef } from '@outboxkit/core'
import { assertOutbox, parseTableName } from '@outboxkit/core/adapter'

/**
 * The outbox table of `outbox`: an outbox made by `defineOutbox`, or a table name such as
 * `'outbox'` or `'app.outbox'` (validated by core).
 */
export function outboxTableRef(outbox: string | Outbox<any> | undefined): TableRef {
  if (outbox === undefined) return parseTableName('outbox')
  if (typeof outbox === 'string') return parseTableName(outbox)
  assertOutbox(outbox, 'typeorm')
  return outbox.table
}

/**
 * The name PostgreSQL gives an implicit object (its `makeObjectName`): `name1[_name2]_label`,
 * the longer of `name1` / `name2` trimmed one byte at a time until it fits in 63 bytes.
 * Identifiers here are ASCII (core validates them), so characters are bytes.
 */
export function postgresObjectName(name1: string, name2: string | null, label: string): string {
  const overhead = label.length + 1 + (name2 === null ? 0 : 1)
  const available = 63 - overhead
  let n1 = name1.length
  let n2 = name2?.length ?? 0
  while (n1 + n2 > available) {
    if (n1 > n2) n1--
    else n2--
  }
  return `${name1.slice(0, n1)}${name2 === null ? '' : `_${name2.slice(0, n2)}`}_${label}`
}
