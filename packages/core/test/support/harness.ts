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
import { type PgBackendConnectionOptions, pgBackend, publishMany } from '@outboxkit/pg'
import pg from 'pg'

/** A promise with its resolve and reject exposed. */
export interface Deferred<T> {
  promise: Promise<T>
  resolve(value: T): void
  reject(error: unknown): void
}

/** Creates a {@link Deferred}. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/**
 * Resolves with the next `event` of `relay` that matches `predicate`, or rejects after `timeoutMs`.
 * Subscribe (call this) before the action that causes the event.
 */
export function nextEvent<K extends keyof RelayEvents>(
  relay: Relay,
  event: K,
  {
    where = () => true,
    timeoutMs = 10_000,
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

/** Collects every `event` of `relay` into an array (live). */
export function collect<K extends keyof RelayEvents>(relay: Relay, event: K): RelayEvents[K][] {
  const seen: RelayEvents[K][] = []
  relay.on(event, (e) => seen.push(e))
  return seen
}

/**
 * A window of real time in which the test counts what happens (never used to wait for an
 * outcome: outcomes are awaited with events or `waitFor`).
 */
export function observeFor(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

/** Calls of a {@link wrapBackend} backend, live. */
export interface BackendCalls {
  claim: number
  settle: number
  /** Every settlement the relay sent, in order. */
  settlements: { id: string; attempts: number; outcome: string }[]
}

/**
 * Wraps a backend to count its calls; `beforeSettle` (optional) runs before each settle is
 * passed on, so a test can hold a settle back.
 */
export function wrapBackend(
  inner: OutboxBackend,
  hooks: { beforeSettle?: () => Promise<void> } = {},
): { backend: OutboxBackend; calls: BackendCalls } {
  const calls: BackendCalls = { claim: 0, settle: 0, settlements: [] }
  const backend: OutboxBackend = {
    ...inner,
    claim(request) {
      calls.claim++
      return inner.claim(request)
    },
    async settle(request) {
      calls.settle++
      for (const s of request.settlements)
        calls.settlements.push({ id: s.id, attempts: s.attempts, outcome: s.outcome })
      await hooks.beforeSettle?.()
      return inner.settle(request)
    },
  }
  return { backend, calls }
}

/** One outbox row as the tests read it through raw SQL. */
export interface Row {
  id: string
  topic: string
  state: string
  attempts: number
  last_error: string | null
  payload: unknown
  /** `available_at - now()` in ms (negative: due). */
  due_in_ms: number
  available_at: Date
}

/**
 * Per-file test harness on the real PostgreSQL server: one pg pool for publishing and raw SQL,
 * unique tables (dropped in {@link Harness.close}), relays and backends that are always stopped.
 */
export class Harness {
  readonly url = testDatabaseUrl()
  readonly pool = new pg.Pool({ connectionString: this.url, max: 12 })
  readonly #tables: string[] = []
  readonly #relays = new Set<Relay>()
  readonly #backends = new Set<OutboxBackend>()

  constructor() {
    this.pool.on('error', () => {})
  }

  /** Raw SQL on the harness pool. */
  async query<T = Record<string, any>>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(text, params)).rows as T[]
  }

  /** Defines an outbox on a fresh unique table and migrates it (unless `migrate: false`). */
  async outbox<T extends TopicSchemas | undefined = undefined>(
    prefix: string,
    options: Omit<DefineOutboxOptions<T>, 'table'> & { migrate?: boolean } = {},
  ): Promise<Outbox<T>> {
    const { migrate: doMigrate = true, ...rest } = options
    const table = uniqueTableName(`core_${prefix}`)
    this.#tables.push(table)
    const outbox = defineOutbox<T>({ ...(rest as DefineOutboxOptions<T>), table })
    if (doMigrate) await migrate(outbox, pgBackend({ pool: this.pool }))
    return outbox
  }

  /** A connection-string pgBackend (its own pool), closed in {@link Harness.cleanup}. */
  backend(options: Partial<PgBackendConnectionOptions> = {}): OutboxBackend {
    const backend = pgBackend({ connectionString: this.url, max: 4, ...options })
    this.#backends.add(backend)
    return backend
  }

  /** Creates a relay (default: its own connection-string backend), stopped in {@link Harness.cleanup}. */
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

  /** Publishes `messages` in one committed transaction on the harness pool. */
  async publish<O extends Outbox<any>>(outbox: O, messages: PublishMessage<O>[]): Promise<PublishResult[]> {
    return this.transaction((client) => publishMany(outbox, client, messages))
  }

  /** Runs `fn` in a transaction on a pooled client: COMMIT when it resolves, ROLLBACK when it throws. */
  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect()
    try {
      await client.query('BEGIN')
      const result = await fn(client)
      await client.query('COMMIT')
      return result
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      client.release()
    }
  }

  /** Every row of the outbox table, or the row with `id`. */
  async rows(outbox: Outbox<any>, id?: string): Promise<Row[]> {
    return this.query<Row>(
      `SELECT id::text AS id, topic, state, attempts, last_error, payload, available_at,
              (extract(epoch FROM available_at - now()) * 1000)::float8 AS due_in_ms
       FROM ${tableSql(outbox)} ${id ? 'WHERE id = $1' : ''} ORDER BY id`,
      id ? [id] : [],
    )
  }

  /** The row with `id`, or undefined when it does not exist. */
  async row(outbox: Outbox<any>, id: string): Promise<Row | undefined> {
    return (await this.rows(outbox, id))[0]
  }

  /** Stops every relay (no grace) and closes every backend made by this harness. */
  async cleanup(): Promise<void> {
    const relays = [...this.#relays]
    this.#relays.clear()
    await Promise.all(relays.map((r) => r.stop({ graceMs: 0 }).catch(() => {})))
    const backends = [...this.#backends]
    this.#backends.clear()
    await Promise.all(backends.map((b) => b.close().catch(() => {})))
  }

  /** {@link Harness.cleanup}, drops the tables, ends the pool. */
  async close(): Promise<void> {
    await this.cleanup()
    for (const t of this.#tables) await this.query(`DROP TABLE IF EXISTS ${t}`).catch(() => {})
    await this.pool.end()
  }
}

/** The table of `outbox` as SQL (the harness only uses plain, unqualified test names). */
export function tableSql(outbox: Outbox<any>): string {
  return outbox.table.schema ? `"${outbox.table.schema}"."${outbox.table.name}"` : `"${outbox.table.name}"`
}

/** `count` simple messages on topic `topic` with payload `{ i }`. */
export function messages(count: number, topic = 't'): { topic: string; payload: { i: number } }[] {
  return Array.from({ length: count }, (_, i) => ({ topic, payload: { i } }))
}
