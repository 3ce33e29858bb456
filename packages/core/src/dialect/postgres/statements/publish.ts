// The publish statements: one statement per publish, whatever the number of messages, in the
// forms a publish needs (one or many messages; plain, with dedupKey, ordered; guarded or not).
import type { PostgresStatements } from '../statements.js'
import { literal, type PostgresTable } from './table.js'

/**
 * Marks the current transaction for a guarded publish statement. A transaction-local setting: in
 * autocommit it is gone when its own statement ends, so a guarded INSERT sent after it only
 * writes if both run in the same open transaction. Drivers that pipeline (postgres.js) send the
 * two together, so a transaction check costs no extra round trip and cannot be raced by a COMMIT.
 */
export const POSTGRES_TRANSACTION_MARKER = "SELECT set_config('outboxkit.in_tx', 'on', true)"

/** The `dedup_key` value of the row a guarded publish statement returns when it was not in a transaction. */
export const POSTGRES_NOT_IN_TRANSACTION = 'outboxkit:not-in-transaction'

/** The statements that write messages (see {@link PostgresStatements.publishOne} and its variants). */
export function postgresPublishStatements(
  table: PostgresTable,
): Pick<
  PostgresStatements,
  | 'publishOne'
  | 'publishMany'
  | 'publishOnePlain'
  | 'publishManyPlain'
  | 'publishOneGuardedPlain'
  | 'publishManyGuardedPlain'
  | 'publishOneGuarded'
  | 'publishManyGuarded'
  | 'publishOneOrdered'
  | 'publishManyOrdered'
  | 'publishOneOrderedGuarded'
  | 'publishManyOrderedGuarded'
> {
  const { t, cacheKey, sequence } = table
  // Ordered messages: the key's transaction-scoped advisory lock is taken in a MATERIALIZED CTE
  // that the INSERT's rows are joined with, so no row is numbered (nextval) before every lock of
  // the statement is held. Concurrent producers of a key therefore number their rows in the order
  // they commit (the lock is released at commit); see docs/ordering.md.
  const keyLock = (key: string) => `hashtextextended(${literal(`outboxkit:key:${cacheKey}:`)} || ${key}, 0)`
  const nextSeq = `nextval(${literal(sequence)}::regclass)`
  const publish = (many: boolean, guarded: boolean, ordered = false, dedup = true) => {
    // Guarded: write only when the transaction marker (POSTGRES_TRANSACTION_MARKER, sent just
    // before on the same connection) is still set, i.e. the marker's transaction still runs.
    const ok = guarded ? 'guard.ok' : 'true'
    const from = guarded ? ' FROM guard' : ''
    const lock = !ordered
      ? ''
      : many
        ? `lk AS MATERIALIZED (
  SELECT count(pg_advisory_xact_lock(h)) AS n FROM (
    SELECT DISTINCT ${keyLock('key')} AS h FROM m${guarded ? ', guard' : ''}
    WHERE ${guarded ? 'guard.ok AND ' : ''}key IS NOT NULL AND topic = ANY($9::text[]) ORDER BY 1
  ) AS k
)`
        : `lk AS MATERIALIZED (SELECT count(pg_advisory_xact_lock(${keyLock('$3::text')})) AS n${guarded ? ' FROM guard WHERE guard.ok' : ''})`
    const seqColumn = ordered ? ', seq' : ''
    const seqValue = !ordered
      ? ''
      : many
        ? `, CASE WHEN topic = ANY($9::text[]) THEN ${nextSeq} END`
        : `, ${nextSeq}`
    const ctes = [
      guarded
        ? `guard AS (SELECT current_setting('outboxkit.in_tx', true) IS NOT DISTINCT FROM 'on' AS ok)`
        : '',
      many
        ? `m AS (
  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[], $7::text[])
    WITH ORDINALITY AS m(id, topic, key, payload, headers, delay_ms, dedup_key, ord)
)`
        : '',
      lock,
      `ins AS (
  INSERT INTO ${t} (id, topic, key, payload, headers, available_at, dedup_key${seqColumn})
  ${
    many
      ? `SELECT id, topic, key, payload::jsonb, headers::jsonb, now() + delay_ms * interval '1 millisecond', dedup_key${seqValue} FROM m${ordered ? ' CROSS JOIN lk' : ''}${guarded ? ', guard WHERE guard.ok' : ''} ORDER BY ord`
      : `SELECT $1::uuid, $2::text, $3::text, $4::text::jsonb, $5::text::jsonb, now() + $6::float8 * interval '1 millisecond', $7::text${seqValue}${
          ordered ? ` FROM lk${guarded ? ', guard' : ''}` : from
        }${guarded ? ' WHERE guard.ok' : ''}`
  }${dedup ? '\n  ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING' : ''}
  RETURNING id
)`,
    ].filter(Boolean)
    const existing = many ? 'dedup_key = ANY($7::text[])' : '$7::text IS NOT NULL AND dedup_key = $7::text'
    return `WITH ${ctes.join(', ')}
SELECT id::text AS id, NULL::text AS dedup_key, true AS inserted FROM ins
${dedup ? `UNION ALL SELECT o.id::text, o.dedup_key, false FROM ${t} AS o${guarded ? ', guard' : ''} WHERE ${ok} AND ${existing.replaceAll('dedup_key =', 'o.dedup_key =')}\n` : ''}UNION ALL SELECT NULL, NULL, NULL${from} WHERE CASE WHEN ${ok} AND $8::text <> '' THEN (SELECT true FROM (SELECT pg_notify($8::text, '')) AS wake) ELSE false END${
      guarded
        ? `
UNION ALL SELECT NULL, '${POSTGRES_NOT_IN_TRANSACTION}', false FROM guard WHERE NOT guard.ok`
        : ''
    }`
  }
  // No dedupKey, no ordering, no guard: a plain INSERT. Its WHERE names no column, so PostgreSQL
  // tests it once per statement: the NOTIFY is queued once, however many rows.
  const wake = `WHERE CASE WHEN $8::text <> '' THEN (SELECT true FROM (SELECT pg_notify($8::text, '')) AS wake) ELSE true END`
  const plain = (
    many: boolean,
  ) => `INSERT INTO ${t} (id, topic, key, payload, headers, available_at, dedup_key)
${
  many
    ? `SELECT id, topic, key, payload::jsonb, headers::jsonb, now() + delay_ms * interval '1 millisecond', dedup_key
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[], $7::text[])
  WITH ORDINALITY AS m(id, topic, key, payload, headers, delay_ms, dedup_key, ord)
${wake}
ORDER BY ord`
    : `SELECT $1::uuid, $2::text, $3::text, $4::text::jsonb, $5::text::jsonb, now() + $6::float8 * interval '1 millisecond', $7::text
${wake}`
}
RETURNING id::text AS id, NULL::text AS dedup_key, true AS inserted`
  const publishOnePlain = plain(false)
  const publishManyPlain = plain(true)
  const publishOne = publish(false, false)
  const publishMany = publish(true, false)
  const publishOneGuarded = publish(false, true)
  const publishOneGuardedPlain = publish(false, true, false, false)
  const publishManyGuardedPlain = publish(true, true, false, false)
  const publishManyGuarded = publish(true, true)
  const publishOneOrdered = publish(false, false, true)
  const publishManyOrdered = publish(true, false, true)
  const publishOneOrderedGuarded = publish(false, true, true)
  const publishManyOrderedGuarded = publish(true, true, true)
  return {
    publishOne,
    publishMany,
    publishOnePlain,
    publishManyPlain,
    publishOneGuardedPlain,
    publishManyGuardedPlain,
    publishOneGuarded,
    publishManyGuarded,
    publishOneOrdered,
    publishManyOrdered,
    publishOneOrderedGuarded,
    publishManyOrderedGuarded,
  }
}
