// PROTOTYPE: alternative claim statements for packages/core/src/sql/postgres.ts, measured by the bench.
import {
  type ClaimedRow,
  type OutboxBackend,
  parseTableName,
  qualifiedTable,
  statementName,
} from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import pg from 'pg'

/**
 * Core's claim with one change: the UPDATE finds its rows with `id = ANY(ARRAY(<due subquery>))`
 * instead of joining the CTE. The subquery becomes an InitPlan run once, and the outer scan is
 * always a primary-key lookup of `limit` ids, so the planner can no longer pick a hash join over
 * a sequential scan of the whole table (what core's join does on a 10k-row table).
 */
export function anyArrayClaim(tableName: string): string {
  const t = qualifiedTable(parseTableName(tableName))
  return `UPDATE ${t} AS o SET
  state = CASE WHEN o.attempts >= $4 THEN 'dead' ELSE 'processing' END,
  attempts = CASE WHEN o.attempts >= $4 THEN o.attempts ELSE o.attempts + 1 END,
  available_at = CASE WHEN o.attempts >= $4 THEN now() ELSE now() + $3::float8 * interval '1 millisecond' END,
  last_error = CASE WHEN o.attempts >= $4
    THEN 'lease expired after attempt ' || o.attempts || ' of ' || $4 || ' without a result (the relay crashed or the handler hung)'
      || COALESCE('; previous error: ' || o.last_error, '')
    ELSE o.last_error END
WHERE o.id = ANY(ARRAY(
  SELECT id FROM ${t}
  WHERE state IN ('pending', 'processing') AND available_at <= now() AND topic = ANY($1::text[])
  ORDER BY available_at, id
  LIMIT $2
  FOR UPDATE SKIP LOCKED
))
RETURNING o.id::text AS id, o.topic, o.key, o.payload::text AS payload, o.headers::text AS headers, o.attempts,
  o.state, (extract(epoch FROM o.created_at) * 1000)::float8 AS created_ms, o.last_error`
}

/**
 * The settle of an all-delivered batch with `keepDelivered: false`: one fenced DELETE joined to
 * the unnested (id, attempts) pairs, instead of core's two-CTE DELETE + UPDATE over five arrays.
 */
export function fastDeleteSettle(tableName: string): string {
  const t = qualifiedTable(parseTableName(tableName))
  return `DELETE FROM ${t} AS o USING unnest($1::uuid[], $2::int4[]) AS s(id, attempts)
WHERE o.id = s.id AND o.attempts = s.attempts AND o.state = 'processing'
RETURNING o.id::text AS id`
}

/** pgBackend with the claim replaced by `claimSql` (same parameters, same rows). */
export function protoPgBackend(
  url: string,
  claimSql: string,
  poolMax = 10,
  fastSettle = false,
): OutboxBackend {
  const pool = new pg.Pool({ connectionString: url, max: poolMax })
  pool.on('error', () => {})
  const inner = pgBackend({ pool })
  const name = statementName('proto_claim', claimSql)
  const backend: OutboxBackend = {
    ...inner,
    async claim(req): Promise<ClaimedRow[]> {
      const { rows } = await pool.query({
        name,
        text: claimSql,
        values: [req.topics, req.limit, req.leaseMs, req.maxAttempts],
      })
      return rows.map((r) => ({
        id: r.id,
        topic: r.topic,
        key: r.key ?? null,
        payload: r.payload,
        headers: r.headers,
        attempts: Number(r.attempts),
        createdAtMs: Number(r.created_ms),
        state: r.state,
        lastError: r.last_error ?? null,
      }))
    },
    async close() {
      await pool.end()
    },
  }
  if (fastSettle) {
    backend.settle = async (req) => {
      if (req.keepDelivered || req.settlements.some((x) => x.outcome !== 'delivered'))
        return inner.settle(req)
      const text = fastDeleteSettle(
        req.table.schema ? `${req.table.schema}.${req.table.name}` : req.table.name,
      )
      const { rows } = await pool.query({
        name: statementName('proto_settle', text),
        text,
        values: [req.settlements.map((x) => x.id), req.settlements.map((x) => x.attempts)],
      })
      return rows.map((r) => r.id as string)
    }
  }
  return backend
}
