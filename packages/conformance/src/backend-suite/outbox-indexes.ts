import { expect } from 'vitest'
import type { IndexInfo, OutboxDialect } from '../dialect-sql.js'

/**
 * The indexes `migrate` must create. PostgreSQL: the partial `(available_at, id)` index of live
 * rows that serves the claim, and the partial unique index on `dedup_key`. SQLite: the same,
 * partial too. MySQL (no partial indexes): the same on generated columns derived from
 * `available_at` (NULL for terminal rows) and from `dedup_key` (e.g. a hash).
 */
export function expectOutboxIndexes(dialect: OutboxDialect, indexes: IndexInfo[]): void {
  if (dialect === 'postgres') {
    const defs = indexes.map((i) => i.definition ?? '')
    expect(defs.some((d) => /\(available_at, id\) WHERE/.test(d) && /pending/.test(d))).toBe(true)
    expect(defs.some((d) => /UNIQUE INDEX .*\(dedup_key\) WHERE \(dedup_key IS NOT NULL\)/.test(d))).toBe(
      true,
    )
    return
  }
  const described = JSON.stringify(indexes)
  /** Column `i` of `index` is `column`, or (MySQL) a generated column computed from it. */
  const covers = (index: IndexInfo, i: number, column: string) =>
    index.columns[i] === column || (index.generated?.[i] ?? '').includes(column)
  const claimIndex = indexes.find(
    (x) =>
      x.columns.length === 2 &&
      covers(x, 0, 'available_at') &&
      x.columns[1] === 'id' &&
      (dialect === 'sqlite'
        ? x.partial === true && /pending/.test(x.definition ?? '')
        : x.columns[0] === 'available_at' || /pending/.test(x.generated?.[0] ?? '')),
  )
  expect(claimIndex, `an index on (available_at, id) of live rows: ${described}`).toBeDefined()
  const dedupIndex = indexes.find(
    (x) =>
      x.unique &&
      x.columns.length === 1 &&
      covers(x, 0, 'dedup_key') &&
      (dialect !== 'sqlite' || (x.partial === true && /dedup_key IS NOT NULL/.test(x.definition ?? ''))),
  )
  expect(dedupIndex, `a unique index on dedup_key: ${described}`).toBeDefined()
}
