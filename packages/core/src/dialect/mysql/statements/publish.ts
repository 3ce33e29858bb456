import type { MysqlStatements } from '../statements.js'
import { count, later, type MysqlTable, marks, memo } from './table.js'

/**
 * A boolean SQL expression that is true only inside an open transaction, for MariaDB (10.3+):
 * `@@in_transaction` is 1 from `START TRANSACTION`/`BEGIN` (or XA START) to `COMMIT`/`ROLLBACK`,
 * and a session with `autocommit = 0` is always in a transaction (an implicit one that the next
 * COMMIT or ROLLBACK ends). MySQL has no `@@in_transaction`: it rejects the statement.
 */
export const MARIADB_TRANSACTION_GUARD = '(@@in_transaction = 1 OR @@autocommit = 0)'

/** Most rows one publish INSERT carries (8 placeholders each stay under the prepared-statement limit of 65,535). */
export const MYSQL_MAX_ROWS_PER_INSERT = 8_000

/** The statements of a publish: the INSERT of the messages, the dedup lookup, and the reservation of ordered keys' numbers. */
export function mysqlPublishStatements(
  table: MysqlTable,
): Pick<MysqlStatements, 'insert' | 'dedupLookup' | 'lockKeys' | 'keySeqs'> {
  const { t, keys } = table
  const cols = (ordered: boolean) =>
    `id, topic, \`key\`, payload, headers, available_at, dedup_key${ordered ? ', seq' : ''}`

  const insert = memo((rows: number, ordered: boolean, guard: string) => {
    count(rows, 'rows')
    const width = ordered ? 8 : 7
    if (!guard) {
      const row = `(?, ?, ?, ?, ?, ${later('?')}, ?${ordered ? ', ?' : ''})`
      return `INSERT INTO ${t} (${cols(ordered)}) VALUES ${Array(rows).fill(row).join(', ')}
ON DUPLICATE KEY UPDATE id = id`
    }
    // Guarded: INSERT ... SELECT from a derived table of the values, WHERE the guard holds. The
    // derived columns are named c0..c8 so `id = id` below is the table's column, unambiguously.
    const first = `SELECT ${Array.from({ length: width }, (_, i) => `? AS c${i}`).join(', ')}, 0 AS ord`
    const rest = Array.from({ length: rows - 1 }, (_, r) => `SELECT ${marks(width)}, ${r + 1}`)
    return `INSERT INTO ${t} (${cols(ordered)})
SELECT c0, c1, c2, c3, c4, ${later('c5')}, c6${ordered ? ', c7' : ''}
FROM (${[first, ...rest].join(' UNION ALL ')}) AS m
WHERE ${guard} ORDER BY ord
ON DUPLICATE KEY UPDATE id = id`
  })
  const dedupLookup = memo(
    (n: number) =>
      `SELECT id, dedup_key FROM ${t} WHERE dedup_hash IN (${Array(count(n, 'n')).fill('UNHEX(SHA2(?, 256))').join(', ')}) LOCK IN SHARE MODE`,
  )
  // Per key: `key, count`. Rows are locked in the order given (the caller sorts the keys), so
  // producers of overlapping key sets never wait on each other in a cycle.
  const lockKeys = memo((n: number, guard: string) => {
    count(n, 'keys')
    const first = 'SELECT ? AS c0, ? AS c1, 0 AS ord'
    const rest = Array.from({ length: n - 1 }, (_, r) => `SELECT ?, ?, ${r + 1}`)
    return `INSERT INTO ${keys} (key_hash, \`key\`, seq)
SELECT UNHEX(SHA2(c0, 256)), c0, c1 FROM (${[first, ...rest].join(' UNION ALL ')}) AS m
${guard ? `WHERE ${guard} ` : ''}ORDER BY ord
ON DUPLICATE KEY UPDATE seq = seq + VALUES(seq)`
  })
  const keySeqs = memo(
    (n: number) =>
      `SELECT \`key\`, seq FROM ${keys} WHERE key_hash IN (${Array(count(n, 'n')).fill('UNHEX(SHA2(?, 256))').join(', ')})`,
  )
  return {
    insert: (o) => insert(o.rows, o.ordered, o.guard ?? ''),
    dedupLookup,
    lockKeys: (n, guard) => lockKeys(n, guard ?? ''),
    keySeqs,
  }
}
