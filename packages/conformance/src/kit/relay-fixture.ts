import {
  createRelay,
  type DefineOutboxOptions,
  defineOutbox,
  migrate,
  type Outbox,
  type OutboxBackend,
  type Relay,
  type RelayOptions,
  type TopicSchemas,
} from '@outboxkit/core'
import { qualifiedTable } from '@outboxkit/core/adapter'
import { uniqueTableName, waitFor } from '../database.js'
import { TRANSPORT } from '../matrix.js'

/** Options of {@link RelayFixture.outbox}: those of `defineOutbox` but the table, and whether to migrate it. */
export type FixtureOutboxOptions<T extends TopicSchemas | undefined> = Omit<
  DefineOutboxOptions<T>,
  'table'
> & {
  /** Create the table with `migrate` on {@link RelayFixture.sharedBackend}. Default true. */
  migrate?: boolean
}

/**
 * The bookkeeping of a per-file test fixture on one database: unique tables (see
 * {@link RelayFixture.tables}), and every relay it creates stopped and every backend it opens
 * closed in {@link RelayFixture.cleanup}. Subclasses say how backends are opened
 * ({@link RelayFixture.backend}, {@link RelayFixture.sharedBackend}) and register theirs with
 * {@link RelayFixture.owned}.
 */
export abstract class RelayFixture {
  readonly #tablePrefix: string
  readonly #tables: string[] = []
  readonly #relays = new Set<Relay>()
  readonly #backends = new Set<OutboxBackend>()
  /** Outboxes of `transport: 'wal'` whose slots {@link RelayFixture.cleanup} drops. */
  readonly #walOutboxes: Outbox<any>[] = []

  /** `tablePrefix` starts every table name of the fixture, e.g. `core` gives `ok_core_<prefix>_...`. */
  constructor(tablePrefix: string) {
    this.#tablePrefix = tablePrefix
  }

  /** A backend of the fixture's database on connections of its own, closed in {@link RelayFixture.cleanup}. */
  abstract backend(): OutboxBackend

  /** A backend on the fixture's own connection (which it does not own): what migrates its tables. */
  abstract sharedBackend(): OutboxBackend | Promise<OutboxBackend>

  /** The tables made by {@link RelayFixture.table} so far (the subclass drops them when it closes). */
  get tables(): readonly string[] {
    return this.#tables
  }

  /** A unique table name, remembered in {@link RelayFixture.tables}. */
  table(prefix: string): string {
    const name = uniqueTableName(`${this.#tablePrefix}_${prefix}`)
    this.#tables.push(name)
    return name
  }

  /** Defines an outbox on a fresh unique table and migrates it (unless `migrate: false`). */
  async outbox<T extends TopicSchemas | undefined = undefined>(
    prefix: string,
    options: FixtureOutboxOptions<T> = {},
  ): Promise<Outbox<T>> {
    const { migrate: doMigrate = true, ...rest } = options
    const outbox = defineOutbox<T>({
      ...(TRANSPORT === 'wal' ? { transport: 'wal' } : {}),
      ...(rest as DefineOutboxOptions<T>),
      table: this.table(prefix),
    })
    if (outbox.transport === 'wal') this.#walOutboxes.push(outbox)
    if (doMigrate) await migrate(outbox, await this.sharedBackend())
    return outbox
  }

  /** Registers `backend` to be closed in {@link RelayFixture.cleanup}; returns it. */
  protected owned(backend: OutboxBackend): OutboxBackend {
    this.#backends.add(backend)
    return backend
  }

  /** Creates a relay (default: on its own {@link RelayFixture.backend}), stopped in {@link RelayFixture.cleanup}. */
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

  /** Stops every relay (no grace) and closes every backend of the fixture. */
  async cleanup(): Promise<void> {
    const relays = [...this.#relays]
    this.#relays.clear()
    await Promise.all(relays.map((r) => r.stop({ graceMs: 0 }).catch(() => {})))
    const backends = [...this.#backends]
    this.#backends.clear()
    await Promise.all(backends.map((b) => b.close().catch(() => {})))
    await this.#dropWalSlots()
  }

  /**
   * Drops the replication slots (and publications, dispatch marks) of the WAL outboxes made so
   * far: a slot left behind keeps WAL on the server and takes one of its `max_replication_slots`.
   * A stopped relay's walsender may hold the slot a moment longer: retried until it is free.
   */
  async #dropWalSlots(): Promise<void> {
    const outboxes = this.#walOutboxes.splice(0)
    if (outboxes.length === 0) return
    const wal = (await this.sharedBackend()).wal
    for (const outbox of outboxes) {
      await waitFor(
        () =>
          wal
            ? wal.dropSlot(outbox).then(
                () => true,
                () => false,
              )
            : true,
        {
          what: `the replication slot of ${outbox.table.display} dropped`,
        },
      ).catch(() => {})
    }
  }
}

/** The quoted table of `outbox`, schema-qualified when it has a schema. */
export function tableSql(outbox: Outbox<any>): string {
  return qualifiedTable(outbox.table)
}

/** `count` simple messages on topic `topic` with payload `{ i }`. */
export function messages(count: number, topic = 't'): { topic: string; payload: { i: number } }[] {
  return Array.from({ length: count }, (_, i) => ({ topic, payload: { i } }))
}
