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

/** Which form of the publish statement to build (see {@link postgresPublishStatements}). */
interface PublishForm {
  /** Many messages (arrays, `unnest`) rather than one. */
  readonly many: boolean
  /** Writes only inside the transaction marked by {@link POSTGRES_TRANSACTION_MARKER}. */
  readonly guarded: boolean
  /** Messages of ordered topics: locks their keys, numbers them from the sequence. */
  readonly ordered: boolean
  /** Some message may have a `dedupKey`: `ON CONFLICT` and the lookup of the existing row. */
  readonly dedup: boolean
}

// Ordered messages: the key's transaction-scoped advisory lock is taken in a MATERIALIZED CTE
// that the INSERT's rows are joined with, so no row is numbered (nextval) before every lock of
// the statement is held. Concurrent producers of a key therefore number their rows in the order
// they commit (the lock is released at commit); see docs/ordering.md.

/** The `lk` CTE that takes the advisory lock of every ordered key of the statement ('' unless ordered). */
function keyLocksCte(table: PostgresTable, { many, guarded, ordered }: PublishForm): string {
  if (!ordered) return ''
  const keyLock = (key: string) =>
    `hashtextextended(${literal(`outboxkit:key:${table.cacheKey}:`)} || ${key}, 0)`
  return many
    ? `lk AS MATERIALIZED (
  SELECT count(pg_advisory_xact_lock(h)) AS n FROM (
    SELECT DISTINCT ${keyLock('key')} AS h FROM m${guarded ? ', guard' : ''}
    WHERE ${guarded ? 'guard.ok AND ' : ''}key IS NOT NULL AND topic = ANY($9::text[]) ORDER BY 1
  ) AS k
)`
    : `lk AS MATERIALIZED (SELECT count(pg_advisory_xact_lock(${keyLock('$3::text')})) AS n${guarded ? ' FROM guard WHERE guard.ok' : ''})`
}

/** The `ins` CTE: the INSERT of the messages, returning the ids it wrote. */
function insertCte(table: PostgresTable, { many, guarded, ordered, dedup }: PublishForm): string {
  const nextSeq = `nextval(${literal(table.sequence)}::regclass)`
  const from = guarded ? ' FROM guard' : ''
  const seqColumn = ordered ? ', seq' : ''
  const seqValue = !ordered
    ? ''
    : many
      ? `, CASE WHEN topic = ANY($9::text[]) THEN ${nextSeq} END`
      : `, ${nextSeq}`
  return `ins AS (
  INSERT INTO ${table.t} (id, topic, key, payload, headers, available_at, dedup_key${seqColumn})
  ${
    many
      ? `SELECT id, topic, key, payload::jsonb, headers::jsonb, now() + delay_ms * interval '1 millisecond', dedup_key${seqValue} FROM m${ordered ? ' CROSS JOIN lk' : ''}${guarded ? ', guard WHERE guard.ok' : ''} ORDER BY ord`
      : `SELECT $1::uuid, $2::text, $3::text, $4::text::jsonb, $5::text::jsonb, now() + $6::float8 * interval '1 millisecond', $7::text${seqValue}${
          ordered ? ` FROM lk${guarded ? ', guard' : ''}` : from
        }${guarded ? ' WHERE guard.ok' : ''}`
  }${dedup ? '\n  ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING' : ''}
  RETURNING id
)`
}

/** One form of the publish statement: the CTEs, then the rows written, the rows found by dedup key, the wake. */
function publishStatement(table: PostgresTable, form: PublishForm): string {
  const { many, guarded, dedup } = form
  // Guarded: write only when the transaction marker (POSTGRES_TRANSACTION_MARKER, sent just
  // before on the same connection) is still set, i.e. the marker's transaction still runs.
  const ok = guarded ? 'guard.ok' : 'true'
  const from = guarded ? ' FROM guard' : ''
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
    keyLocksCte(table, form),
    insertCte(table, form),
  ].filter(Boolean)
  const existing = many ? 'dedup_key = ANY($7::text[])' : '$7::text IS NOT NULL AND dedup_key = $7::text'
  return `WITH ${ctes.join(', ')}
SELECT id::text AS id, NULL::text AS dedup_key, true AS inserted FROM ins
${dedup ? `UNION ALL SELECT o.id::text, o.dedup_key, false FROM ${table.t} AS o${guarded ? ', guard' : ''} WHERE ${ok} AND ${existing.replaceAll('dedup_key =', 'o.dedup_key =')}\n` : ''}UNION ALL SELECT NULL, NULL, NULL${from} WHERE CASE WHEN ${ok} AND $8::text <> '' THEN (SELECT true FROM (SELECT pg_notify($8::text, '')) AS wake) ELSE false END${
    guarded
      ? `
UNION ALL SELECT NULL, '${POSTGRES_NOT_IN_TRANSACTION}', false FROM guard WHERE NOT guard.ok`
      : ''
  }`
}

/**
 * No dedupKey, no ordering, no guard: a plain INSERT. Its WHERE names no column, so PostgreSQL
 * tests it once per statement: the NOTIFY is queued once, however many rows.
 */
function plainPublishStatement(t: string, many: boolean): string {
  const wake = `WHERE CASE WHEN $8::text <> '' THEN (SELECT true FROM (SELECT pg_notify($8::text, '')) AS wake) ELSE true END`
  return `INSERT INTO ${t} (id, topic, key, payload, headers, available_at, dedup_key)
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
}

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
  const publish = (many: boolean, guarded: boolean, ordered = false, dedup = true) =>
    publishStatement(table, { many, guarded, ordered, dedup })
  return {
    publishOne: publish(false, false),
    publishMany: publish(true, false),
    publishOnePlain: plainPublishStatement(table.t, false),
    publishManyPlain: plainPublishStatement(table.t, true),
    publishOneGuardedPlain: publish(false, true, false, false),
    publishManyGuardedPlain: publish(true, true, false, false),
    publishOneGuarded: publish(false, true),
    publishManyGuarded: publish(true, true),
    publishOneOrdered: publish(false, false, true),
    publishManyOrdered: publish(true, false, true),
    publishOneOrderedGuarded: publish(false, true, true),
    publishManyOrderedGuarded: publish(true, true, true),
  }
}
