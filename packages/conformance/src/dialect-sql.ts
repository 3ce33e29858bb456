import { randomUUID } from 'node:crypto'

import type { OutboxDialect } from '@outboxkit/core'

export type { OutboxDialect }

/** Every dialect, in matrix order. */
export const ALL_DIALECTS: readonly OutboxDialect[] = ['postgres', 'mysql', 'sqlite']

/** Raw SQL written for one dialect (its own placeholders), returning plain rows. */
export type InspectFn = (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>

/** The states of an outbox row. */
export type SeedState = 'pending' | 'processing' | 'delivered' | 'dead'

/** A row the tests write straight into an outbox table, bypassing publish. */
export interface SeedRow {
  /** Default `'t'`. */
  topic?: string
  key?: string | null
  /** Any JSON value, stored as `JSON.stringify(payload)`. Default `{}`. */
  payload?: unknown
  /** Raw JSON text to store instead of `payload` (e.g. a payload a topic schema refuses). */
  payloadText?: string
  /** Default `'pending'`. */
  state?: SeedState
  /** Default 0. */
  attempts?: number
  /** `available_at` relative to the database clock, in ms (negative: in the past). Default 0. */
  availableInMs?: number
  /** `created_at` relative to the database clock, in ms. Default: the column default (now). */
  createdInMs?: number
  lastError?: string | null
}

/** One outbox row read back through raw SQL, the same shape on every dialect. */
export interface OutboxRowRead {
  id: string
  topic: string
  key: string | null
  /** The payload as the database returns it as text (parse it to compare). */
  payload_text: string
  /** The headers as text. */
  headers_text: string
  state: string
  attempts: number
  dedup_key: string | null
  last_error: string | null
  /** `available_at` in epoch ms, truncated to the millisecond. */
  available_at_ms: number
  /** `created_at` in epoch ms, truncated to the millisecond. */
  created_at_ms: number
  /** `available_at - now()` in ms on the database clock (negative: due). */
  due_in_ms: number
  /** `available_at - created_at` in ms. */
  delay_ms: number
}

/** Which rows {@link OutboxSql.rows} and {@link OutboxSql.count} read. */
export interface RowFilter {
  id?: string
  topic?: string
  state?: string
}

/** Changes {@link OutboxSql.update} writes to one row. */
export interface RowChanges {
  topic?: string
  /** A number, or `'increment'` for `attempts + 1`. */
  attempts?: number | 'increment'
  lastError?: string | null
  /** `available_at = now + availableInMs` (database clock). */
  availableInMs?: number
  /** `available_at` copied exactly (to the microsecond) from the row with this id. */
  availableAtOf?: string
}

/** An index of the outbox table as the database describes it. */
export interface IndexInfo {
  name: string
  unique: boolean
  /** Indexed columns in order. */
  columns: string[]
  /** Whether the index is partial; `null` where the dialect has no partial indexes (MySQL). */
  partial: boolean | null
  /** The index definition (PostgreSQL `indexdef`, SQLite `CREATE INDEX` text); `null` on MySQL. */
  definition: string | null
  /**
   * MySQL: per column, the generation expression of a generated column (MySQL has no partial or
   * expression indexes on every version, so it indexes generated columns), or `null`.
   */
  generated?: (string | null)[]
}

/**
 * The raw SQL the conformance suites and the relay-semantics harness issue, written once per
 * dialect. Every method runs through the given inspector, never through the code under test.
 */
export interface OutboxSql {
  readonly dialect: OutboxDialect
  /** The `n`-th (1-based) positional placeholder: `$n` on PostgreSQL, `?` elsewhere. */
  param(n: number): string
  /** An identifier quoted for the dialect (`"x"`, or `` `x` `` on MySQL). */
  ident(name: string): string
  /** `count(*)` of the rows matching `filter`. */
  count(table: string, filter?: RowFilter): Promise<number>
  /** The rows matching `filter`, ordered by id. */
  rows(table: string, filter?: RowFilter): Promise<OutboxRowRead[]>
  /** The row with `id`, or undefined. */
  row(table: string, id: string): Promise<OutboxRowRead | undefined>
  /** Inserts `rows` in one statement; returns their ids (generated here, in order). */
  insert(table: string, rows: readonly SeedRow[]): Promise<string[]>
  /** Updates one row. */
  update(table: string, id: string, changes: RowChanges): Promise<void>
  /** The database clock, in epoch ms (with sub-millisecond precision where the dialect has it). */
  nowMs(): Promise<number>
  /** The indexes of `table`. */
  indexes(table: string): Promise<IndexInfo[]>
  /** Deletes every row of `table`. */
  clear(table: string): Promise<void>
  /** Drops `table` (and what the dialect's migrate creates beside it). */
  drop(table: string): Promise<void>
}

/** `now()` in integer epoch ms from SQLite's own clock, as core's SQLite statements compute it. */
const SQLITE_NOW_MS = `CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)`
/** Microseconds from the epoch to a MySQL DATETIME(6) holding UTC. */
const mysqlEpochUs = (col: string) => `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${col})`

interface DialectParts {
  dialect: OutboxDialect
  param(n: number): string
  ident(name: string): string
  /** SELECT list of {@link OutboxRowRead} (without FROM). */
  rowColumns: string
  countExpr: string
  /** `available_at`/`created_at` value `now + <param> ms`. */
  nowPlusMs(param: string): string
  jsonParam(param: string): string
  nowMsSql: string
  indexes(table: string, inspect: InspectFn): Promise<IndexInfo[]>
  availableAtOf(table: string, p: string): string
}

const postgres: DialectParts = {
  dialect: 'postgres',
  param: (n) => `$${n}`,
  ident: (name) => `"${name.replace(/"/g, '""')}"`,
  rowColumns: `id::text AS id, topic, key, payload::text AS payload_text, headers::text AS headers_text, state,
    attempts, dedup_key, last_error,
    floor(extract(epoch FROM available_at) * 1000)::float8 AS available_at_ms,
    floor(extract(epoch FROM created_at) * 1000)::float8 AS created_at_ms,
    (extract(epoch FROM available_at - now()) * 1000)::float8 AS due_in_ms,
    (extract(epoch FROM available_at - created_at) * 1000)::float8 AS delay_ms`,
  countExpr: 'count(*)::int',
  nowPlusMs: (p) => `now() + ${p}::float8 * interval '1 millisecond'`,
  jsonParam: (p) => `${p}::jsonb`,
  nowMsSql: `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`,
  async indexes(table, inspect) {
    const rows = await inspect(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = $1 ORDER BY indexname`,
      [table],
    )
    return rows.map((r) => {
      const def = String(r.indexdef)
      return {
        name: String(r.indexname),
        unique: /^CREATE UNIQUE INDEX/.test(def),
        columns: (/\(([^)]*)\)/.exec(def)?.[1] ?? '').split(',').map((c) => c.trim()),
        partial: / WHERE /.test(def),
        definition: def,
      }
    })
  },
  availableAtOf: (t, p) => `(SELECT available_at FROM ${t} WHERE id = ${p})`,
}

const mysql: DialectParts = {
  dialect: 'mysql',
  param: () => '?',
  ident: (name) => `\`${name.replace(/`/g, '``')}\``,
  rowColumns: `id, topic, \`key\`, CAST(payload AS CHAR) AS payload_text, CAST(headers AS CHAR) AS headers_text,
    state, attempts, dedup_key, last_error,
    ${mysqlEpochUs('available_at')} DIV 1000 AS available_at_ms,
    ${mysqlEpochUs('created_at')} DIV 1000 AS created_at_ms,
    TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), available_at) / 1000 AS due_in_ms,
    TIMESTAMPDIFF(MICROSECOND, created_at, available_at) / 1000 AS delay_ms`,
  countExpr: 'count(*)',
  nowPlusMs: (p) => `UTC_TIMESTAMP(6) + INTERVAL ${p} MICROSECOND`,
  jsonParam: (p) => p,
  nowMsSql: `SELECT ${mysqlEpochUs('UTC_TIMESTAMP(6)')} / 1000 AS ms`,
  async indexes(table, inspect) {
    const rows = await inspect(
      `SELECT s.index_name AS name, s.non_unique AS non_unique, s.column_name AS col,
              c.generation_expression AS expr
       FROM information_schema.statistics s
       LEFT JOIN information_schema.columns c
         ON c.table_schema = s.table_schema AND c.table_name = s.table_name AND c.column_name = s.column_name
       WHERE s.table_schema = DATABASE() AND s.table_name = ?
       ORDER BY s.index_name, s.seq_in_index`,
      [table],
    )
    const byName = new Map<string, IndexInfo>()
    for (const r of rows) {
      const name = String(r.name)
      let index = byName.get(name)
      if (!index) {
        index = { name, unique: Number(r.non_unique) === 0, columns: [], partial: null, definition: null }
        index.generated = []
        byName.set(name, index)
      }
      index.columns.push(String(r.col))
      index.generated!.push(r.expr == null || r.expr === '' ? null : String(r.expr))
    }
    return [...byName.values()]
  },
  // MySQL refuses a subquery on the table being updated unless it is materialised first.
  availableAtOf: (t, p) => `(SELECT a FROM (SELECT available_at AS a FROM ${t} WHERE id = ${p}) AS src)`,
}

const sqlite: DialectParts = {
  dialect: 'sqlite',
  param: () => '?',
  ident: (name) => `"${name.replace(/"/g, '""')}"`,
  rowColumns: `id, topic, "key", payload AS payload_text, headers AS headers_text, state, attempts, dedup_key,
    last_error, available_at AS available_at_ms, created_at AS created_at_ms,
    available_at - ${SQLITE_NOW_MS} AS due_in_ms, available_at - created_at AS delay_ms`,
  countExpr: 'count(*)',
  nowPlusMs: (p) => `${SQLITE_NOW_MS} + ${p}`,
  jsonParam: (p) => p,
  nowMsSql: `SELECT (julianday('now') - 2440587.5) * 86400000.0 AS ms`,
  async indexes(table, inspect) {
    const rows = await inspect(
      `SELECT il.name AS name, il."unique" AS is_unique, il.partial AS partial, m.sql AS definition,
              (SELECT group_concat(name, ',') FROM (SELECT ii.name FROM pragma_index_info(il.name) ii ORDER BY ii.seqno)) AS cols
       FROM pragma_index_list(?) il LEFT JOIN sqlite_master m ON m.type = 'index' AND m.name = il.name
       ORDER BY il.name`,
      [table],
    )
    return rows.map((r) => ({
      name: String(r.name),
      unique: Number(r.is_unique) === 1,
      columns: String(r.cols ?? '').split(','),
      partial: Number(r.partial) === 1,
      definition: r.definition == null ? null : String(r.definition),
    }))
  },
  availableAtOf: (t, p) => `(SELECT available_at FROM ${t} WHERE id = ${p})`,
}

const PARTS: Record<OutboxDialect, DialectParts> = { postgres, mysql, sqlite }

const num = (v: unknown): number => (typeof v === 'bigint' ? Number(v) : Number(v))

function normalizeRow(r: Record<string, unknown>): OutboxRowRead {
  return {
    id: String(r.id),
    topic: String(r.topic),
    key: r.key == null ? null : String(r.key),
    payload_text: String(r.payload_text),
    headers_text: String(r.headers_text),
    state: String(r.state),
    attempts: num(r.attempts),
    dedup_key: r.dedup_key == null ? null : String(r.dedup_key),
    last_error: r.last_error == null ? null : String(r.last_error),
    available_at_ms: num(r.available_at_ms),
    created_at_ms: num(r.created_at_ms),
    due_in_ms: num(r.due_in_ms),
    delay_ms: num(r.delay_ms),
  }
}

/** Validates a dialect name (a typo in a matrix must fail loudly, not run nothing). */
export function assertDialect(value: unknown): OutboxDialect {
  if (typeof value === 'string' && (ALL_DIALECTS as readonly string[]).includes(value))
    return value as OutboxDialect
  throw new Error(
    `[outboxkit] [conformance] unknown dialect ${JSON.stringify(value)}: use one of ${ALL_DIALECTS.join(', ')}`,
  )
}

/**
 * The raw SQL of the suites for `dialect`, run through `inspect` (SQL written for that dialect,
 * with its own placeholders). Table names are the plain unquoted test names.
 */
export function outboxSql(dialect: OutboxDialect, inspect: InspectFn): OutboxSql {
  const d = PARTS[assertDialect(dialect)]
  const q = d.ident
  const where = (filter: RowFilter = {}) => {
    const conds: string[] = []
    const params: unknown[] = []
    for (const col of ['id', 'topic', 'state'] as const) {
      const v = filter[col]
      if (v === undefined) continue
      params.push(v)
      conds.push(`${col} = ${d.param(params.length)}`)
    }
    return { sql: conds.length ? ` WHERE ${conds.join(' AND ')}` : '', params }
  }
  const rows = async (table: string, filter?: RowFilter) => {
    const w = where(filter)
    const got = await inspect(`SELECT ${d.rowColumns} FROM ${q(table)}${w.sql} ORDER BY id`, w.params)
    return got.map(normalizeRow)
  }
  return {
    dialect: d.dialect,
    param: d.param,
    ident: q,
    async count(table, filter) {
      const w = where(filter)
      const [r] = await inspect(`SELECT ${d.countExpr} AS n FROM ${q(table)}${w.sql}`, w.params)
      return num(r!.n)
    },
    rows,
    async row(table, id) {
      return (await rows(table, { id }))[0]
    },
    async insert(table, seeds) {
      if (seeds.length === 0) return []
      const withCreated = seeds.some((s) => s.createdInMs !== undefined)
      const cols = ['id', 'topic', q('key'), 'payload', 'state', 'attempts', 'available_at', 'last_error']
      if (withCreated) cols.push('created_at')
      const ids: string[] = []
      const params: unknown[] = []
      const p = () => d.param(params.length)
      // MySQL adds microseconds (INTERVAL n MICROSECOND); the others add milliseconds.
      const offset = (ms: number) => (d.dialect === 'mysql' ? Math.round(ms * 1000) : Math.round(ms))
      const tuples = seeds.map((s) => {
        const id = randomUUID()
        ids.push(id)
        const values: string[] = []
        const add = (v: unknown, wrap: (x: string) => string = (x) => x) => {
          params.push(v)
          values.push(wrap(p()))
        }
        add(id)
        add(s.topic ?? 't')
        add(s.key ?? null)
        add(s.payloadText ?? JSON.stringify(s.payload ?? {}), d.jsonParam)
        add(s.state ?? 'pending')
        add(s.attempts ?? 0)
        add(offset(s.availableInMs ?? 0), d.nowPlusMs)
        add(s.lastError ?? null)
        if (withCreated) add(offset(s.createdInMs ?? 0), d.nowPlusMs)
        return `(${values.join(', ')})`
      })
      await inspect(`INSERT INTO ${q(table)} (${cols.join(', ')}) VALUES ${tuples.join(', ')}`, params)
      return ids
    },
    async update(table, id, changes) {
      const sets: string[] = []
      const params: unknown[] = []
      const p = () => d.param(params.length)
      if (changes.topic !== undefined) {
        params.push(changes.topic)
        sets.push(`topic = ${p()}`)
      }
      if (changes.attempts === 'increment') sets.push('attempts = attempts + 1')
      else if (changes.attempts !== undefined) {
        params.push(changes.attempts)
        sets.push(`attempts = ${p()}`)
      }
      if (changes.lastError !== undefined) {
        params.push(changes.lastError)
        sets.push(`last_error = ${p()}`)
      }
      if (changes.availableInMs !== undefined) {
        params.push(
          d.dialect === 'mysql'
            ? Math.round(changes.availableInMs * 1000)
            : Math.round(changes.availableInMs),
        )
        sets.push(`available_at = ${d.nowPlusMs(p())}`)
      }
      if (changes.availableAtOf !== undefined) {
        params.push(changes.availableAtOf)
        sets.push(`available_at = ${d.availableAtOf(q(table), p())}`)
      }
      if (sets.length === 0) return
      params.push(id)
      await inspect(`UPDATE ${q(table)} SET ${sets.join(', ')} WHERE id = ${p()}`, params)
    },
    async nowMs() {
      const [r] = await inspect(d.nowMsSql)
      return num(r!.ms)
    },
    indexes: (table) => d.indexes(table, inspect),
    async clear(table) {
      await inspect(`DELETE FROM ${q(table)}`)
    },
    async drop(table) {
      await inspect(`DROP TABLE IF EXISTS ${q(table)}`)
      // MySQL's migrate adds a companion table of ordered keys, `<table>_keys` (64-character names).
      if (d.dialect === 'mysql') await inspect(`DROP TABLE IF EXISTS ${q(`${table.slice(0, 59)}_keys`)}`)
    },
  }
}
