// PROTOTYPE: an adaptive wake-up. A relay that is busy marks the outbox "hot" in a one-row table;
// while it is hot, publish skips pg_notify (so commits are not serialised by NOTIFY) and the hot
// relay polls every few ms instead. When traffic stops, the mark lapses and publishes NOTIFY again.
import { parseTableName, postgresStatements, qualifiedTable } from '@outboxkit/core'
import pg from 'pg'

/** The prototype's wake table: one row per channel. */
export const WAKE_TABLE = 'bench_outbox_wake'

/** DDL of the wake table. */
export const WAKE_DDL = `CREATE TABLE IF NOT EXISTS ${WAKE_TABLE} (channel text PRIMARY KEY, hot_until timestamptz NOT NULL)`

/**
 * Core's publishOne with the wake gated: pg_notify runs only when no relay marked the channel hot.
 * Core's statement calls pg_notify inside `CASE WHEN ... $8::text <> '' THEN (SELECT ... pg_notify)`;
 * the gate is added to that CASE condition, and CASE evaluates its THEN branch only when the
 * condition holds, so a hot channel sends no NOTIFY (checked with LISTEN in tmp checks).
 */
export function gatedPublishOne(tableName: string): string {
  const core = postgresStatements(parseTableName(tableName)).publishOne
  const anchor = "$8::text <> '' THEN"
  if (!core.includes(anchor)) throw new Error('bench prototype: core publishOne changed shape')
  return core.replace(
    anchor,
    `$8::text <> '' AND NOT EXISTS (SELECT 1 FROM ${WAKE_TABLE} WHERE channel = $8::text AND hot_until > clock_timestamp()) THEN`,
  )
}

/** The relay's mark: the channel is hot for `ms` more (GREATEST, so several relays cooperate). */
export const MARK_HOT = `INSERT INTO ${WAKE_TABLE} (channel, hot_until) VALUES ($1, now() + $2::float8 * interval '1 millisecond')
ON CONFLICT (channel) DO UPDATE SET hot_until = GREATEST(${WAKE_TABLE}.hot_until, EXCLUDED.hot_until)`

/** Creates (and empties) the wake table. */
export async function resetWake(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query(WAKE_DDL)
  await client.query(`TRUNCATE ${WAKE_TABLE}`)
  await client.end()
}

/** A mark function for the prototype relay, on its own small pool. */
export function markHotFn(
  url: string,
  channel: string,
): { mark: (ms: number) => Promise<void>; end: () => Promise<void> } {
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  pool.on('error', () => {})
  return {
    mark: async (ms) => {
      await pool.query({ name: 'proto_mark_hot', text: MARK_HOT, values: [channel, ms] })
    },
    end: () => pool.end(),
  }
}

/** Quoted table for messages. */
export const outboxTable = (name: string) => qualifiedTable(parseTableName(name))
