import {
  inPgTransaction,
  nextEvent as kitNextEvent,
  RelayFixture,
  tableSql,
  testDatabaseUrl,
} from '@outboxkit/conformance'
import type { Outbox, OutboxBackend, PublishMessage, PublishResult } from '@outboxkit/core'
import { quoteIdent } from '@outboxkit/core/adapter'
import { type PgBackendConnectionOptions, pgBackend, publishMany } from '@outboxkit/pg'
import pg from 'pg'

export { deferred, messages, tableSql } from '@outboxkit/conformance'

/** The kit's `nextEvent` with this suite's longer default bound (20 s): faults make relays slow. */
export const nextEvent: typeof kitNextEvent = (relay, event, options = {}) =>
  kitNextEvent(relay, event, { timeoutMs: 20_000, ...options })

/** One outbox row as read through raw SQL. */
export interface OutboxRow {
  id: string
  topic: string
  state: string
  attempts: number
  last_error: string | null
  /** `available_at - now()` in ms (negative: due). */
  due_in_ms: number
  /** `available_at` as text, with microseconds (stable, for equality). */
  available_at: string
}

/**
 * Per-file fixture on the real PostgreSQL server (or a given one): a pool for publishing and raw
 * SQL, unique tables dropped at the end, relays and backends always stopped.
 */
export class World extends RelayFixture {
  readonly pool: pg.Pool
  constructor(readonly url = testDatabaseUrl()) {
    super('rel')
    this.pool = new pg.Pool({ connectionString: url, max: 10 })
    this.pool.on('error', () => {})
  }

  /** Raw SQL on the fixture's pool (a separate connection from the code under test). */
  async query<T = Record<string, any>>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(text, params)).rows as T[]
  }

  /** A backend on the fixture's pool: what migrates its tables. */
  sharedBackend(): OutboxBackend {
    return pgBackend({ pool: this.pool })
  }

  /** A connection-string pgBackend (its own pool), closed at cleanup. */
  backend(options: Partial<PgBackendConnectionOptions> = {}): OutboxBackend {
    return this.owned(pgBackend({ connectionString: this.url, max: 4, commandTimeoutMs: 15_000, ...options }))
  }

  /** Publishes `messages` in one committed transaction. */
  publish<O extends Outbox<any>>(outbox: O, messages: PublishMessage<O>[]): Promise<PublishResult[]> {
    return inPgTransaction(this.pool, (client) => publishMany(outbox, client, messages))
  }

  /** Every row of the outbox (or the one with `id`). */
  async rows(outbox: Outbox<any>, id?: string): Promise<OutboxRow[]> {
    return this.query<OutboxRow>(
      `SELECT id::text AS id, topic, state, attempts, last_error, available_at::text AS available_at,
              (extract(epoch FROM available_at - now()) * 1000)::float8 AS due_in_ms
       FROM ${tableSql(outbox)} ${id ? 'WHERE id = $1' : ''} ORDER BY id`,
      id ? [id] : [],
    )
  }

  /** Rows still `pending` or `processing`. */
  async live(outbox: Outbox<any>): Promise<number> {
    const [r] = await this.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${tableSql(outbox)} WHERE state IN ('pending', 'processing')`,
    )
    return r!.n
  }

  /** {@link World.cleanup}, drops the tables, ends the pool. */
  async close(): Promise<void> {
    await this.cleanup()
    for (const t of this.tables) await this.query(`DROP TABLE IF EXISTS ${quoteIdent(t)}`).catch(() => {})
    await this.pool.end()
  }
}
