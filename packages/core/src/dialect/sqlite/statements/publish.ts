import type { SqliteStatements } from '../statements.js'
import { compile, SQLITE_NOW_MS, type SqliteTable } from './table.js'

/** The statements that write messages, and the dedup lookup of a publish. */
export function sqlitePublishStatements(
  table: SqliteTable,
): Pick<SqliteStatements, 'publishOne' | 'publishOneOrdered' | 'publishMany' | 'dedupLookup'> {
  const { t } = table
  const now = SQLITE_NOW_MS
  // Ordered messages (docs/ordering.md): SQLite has one writer at a time, and a statement that
  // writes always reads the latest committed state (a transaction whose snapshot is older cannot
  // take the write lock: SQLITE_BUSY_SNAPSHOT). So the key's highest `seq` read by the INSERT
  // itself, plus one, is greater than the seq of every message of the key committed before, and
  // no other producer can write until this transaction ends: `seq` order is commit order, per key.
  const nextSeq = (keyExpr: string) =>
    `(SELECT coalesce(max(p.seq), 0) FROM ${t} AS p WHERE p.key = ${keyExpr} AND p.seq IS NOT NULL AND p.state <> 'delivered')`
  const columns = '(id, topic, key, payload, headers, available_at, created_at, dedup_key, seq)'
  const conflict = 'ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING RETURNING id'
  const publishOne = compile(`INSERT INTO ${t} ${columns}
VALUES (:id, :topic, :key, :payload, :headers, ${now} + :delay_ms, ${now}, :dedup_key, NULL)
${conflict}`)
  const publishOneOrdered = compile(`INSERT INTO ${t} ${columns}
VALUES (:id, :topic, :key, :payload, :headers, ${now} + :delay_ms, ${now}, :dedup_key, ${nextSeq(':key')} + 1)
${conflict}`)
  const field = (i: number) => `json_extract(m.value, '$[${i}]')`
  // `WHERE true` keeps `ON CONFLICT` from parsing as a join constraint (an INSERT ... SELECT rule).
  const publishMany = compile(`INSERT INTO ${t} ${columns}
SELECT ${field(0)}, ${field(1)}, ${field(2)}, ${field(3)}, ${field(4)}, ${now} + ${field(5)}, ${now}, ${field(6)},
  CASE WHEN ${field(7)} IS NULL THEN NULL ELSE ${nextSeq(field(2))} + ${field(7)} END
FROM json_each(:messages) AS m WHERE true
${conflict}`)
  const dedupLookup = compile(
    `SELECT id, dedup_key FROM ${t} WHERE dedup_key IN (SELECT value FROM json_each(:dedup_keys))`,
  )
  return { publishOne, publishOneOrdered, publishMany, dedupLookup }
}
