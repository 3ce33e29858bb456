import { testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import {
  createRelay,
  type DefineOutboxOptions,
  defineOutbox,
  migrate,
  type Outbox,
  type OutboxBackend,
  type PublishMessage,
  type PublishResult,
  type Relay,
  type RelayEvents,
  type RelayOptions,
  type TopicSchemas,
} from '@outboxkit/core'
import { quoteIdent } from '@outboxkit/core/adapter'
import { type PgBackendConnectionOptions, pgBackend, publishMany } from '@outboxkit/pg'
import pg from 'pg'

/** Resolves with the next `event` of `relay` matching `where`, or rejects after `timeoutMs`. */
export function nextEvent<K extends keyof RelayEvents>(
  relay: Relay,
  event: K,
  {
    where = () => true,
    timeoutMs = 20_000,
  }: { where?: (e: RelayEvents[K]) => boolean; timeoutMs?: number } = {},
): Promise<RelayEvents[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off()
      reject(new Error(`timed out after ${timeoutMs} ms waiting for relay event '${String(event)}'`))
    }, timeoutMs)
    const off = relay.on(event, (e) => {
      if (!where(e)) return
      clearTimeout(timer)
      off()
      resolve(e)
    })
  })
}

/** A promise with its resolve exposed. */
export function gate<T = void>(): { promise: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void
  const promise = new Promise<T>((r) => {
    open = r
  })
  return { promise, open }
}

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
export class World {
  readonly pool: pg.Pool
  readonly #tables: string[] = []
  readonly #relays = new Set<Relay>()
  readonly #backends = new Set<OutboxBackend>()

  constructor(readonly url = testDatabaseUrl()) {
    this.pool = new pg.Pool({ connectionString: url, max: 10 })
    this.pool.on('error', () => {})
  }

  /** Raw SQL on the fixture's pool (a separate connection from the code under test). */
  async query<T = Record<string, any>>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(text, params)).rows as T[]
  }

  /** A unique table name (dropped in {@link World.close}). */
  table(prefix: string): string {
    const name = uniqueTableName(`rel_${prefix}`)
    this.#tables.push(name)
    return name
  }

  /** An outbox on a fresh unique table, migrated. */
  async outbox<T extends TopicSchemas | undefined = undefined>(
    prefix: string,
    options: Omit<DefineOutboxOptions<T>, 'table'> = {},
  ): Promise<Outbox<T>> {
    const outbox = defineOutbox<T>({ ...(options as DefineOutboxOptions<T>), table: this.table(prefix) })
    await migrate(outbox, pgBackend({ pool: this.pool }))
    return outbox
  }

  /** A connection-string pgBackend (its own pool), closed at cleanup. */
  backend(options: Partial<PgBackendConnectionOptions> = {}): OutboxBackend {
    const backend = pgBackend({ connectionString: this.url, max: 4, commandTimeoutMs: 15_000, ...options })
    this.#backends.add(backend)
    return backend
  }

  /** A relay (default: on its own connection-string backend), stopped at cleanup. */
  relay<O extends Outbox<any>>(
    outbox: O,
    options: Omit<RelayOptions<O>, 'backend'> & { backend?: OutboxBackend },
  ): Relay {
    const relay = createRelay(outbox, {
      ...options,
      backend: options.backend ?? this.backend(),
    } as RelayOptions<O>)
    this.#relays.add(relay)
    return relay
  }

  /** Publishes `messages` in one committed transaction. */
  async publish<O extends Outbox<any>>(outbox: O, messages: PublishMessage<O>[]): Promise<PublishResult[]> {
    const client = await this.pool.connect()
    try {
      await client.query('BEGIN')
      const results = await publishMany(outbox, client, messages)
      await client.query('COMMIT')
      return results
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      client.release()
    }
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

  /** Stops every relay (no grace) and closes every backend. */
  async cleanup(): Promise<void> {
    const relays = [...this.#relays]
    this.#relays.clear()
    await Promise.all(relays.map((r) => r.stop({ graceMs: 0 }).catch(() => {})))
    const backends = [...this.#backends]
    this.#backends.clear()
    await Promise.all(backends.map((b) => b.close().catch(() => {})))
  }

  /** {@link World.cleanup}, drops the tables, ends the pool. */
  async close(): Promise<void> {
    await this.cleanup()
    for (const t of this.#tables) await this.query(`DROP TABLE IF EXISTS ${quoteIdent(t)}`).catch(() => {})
    await this.pool.end()
  }
}

/** The quoted table of `outbox`. */
export function tableSql(outbox: Outbox<any>): string {
  return outbox.table.schema
    ? `${quoteIdent(outbox.table.schema)}.${quoteIdent(outbox.table.name)}`
    : quoteIdent(outbox.table.name)
}

/** `count` messages on `topic` with payload `{ i }`. */
export function messages(count: number, topic = 't'): { topic: string; payload: { i: number } }[] {
  return Array.from({ length: count }, (_, i) => ({ topic, payload: { i } }))
}
