import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testDatabaseUrl, testMysqlUri, uniqueTableName } from '@outboxkit/conformance'
import type { Outbox, OutboxDialect } from '@outboxkit/core'
import { pollUntil } from '../../src/database.js'
import { createLedger, dropLedger, type LedgerTables, ledgerTables } from '../../src/ledger.js'
import { type DatabaseTarget, type LedgerDb, openLedgerDb } from '../../src/ledger-db.js'
import { RelayFleet, type RelayFleetOptions } from '../../src/relay-fleet.js'
import type { RelayWorkerConfig } from '../../src/relay-worker-config.js'

/** A run's tables, a bookkeeping connection and a fleet of relay processes, torn down by `close()`. */
export interface FleetFixture {
  readonly db: LedgerDb
  /** Where the producers publish: `db`, or a connection of its own through the `pooler`. */
  readonly producerDb: LedgerDb
  readonly tables: LedgerTables
  readonly outbox: Outbox
  readonly fleet: RelayFleet
  close(): Promise<void>
}

let runs = 0

/**
 * The test database of `dialect`: the suite's PostgreSQL or MariaDB/MySQL server, or a fresh
 * SQLite file (WAL) in the OS temp dir that every process of the run opens, deleted by `dispose`.
 */
export function testTarget(dialect: OutboxDialect, name: string): DatabaseTarget & { dispose(): void } {
  switch (dialect) {
    case 'postgres':
      return { dialect, url: testDatabaseUrl(), dispose() {} }
    case 'mysql':
      return { dialect, url: testMysqlUri(), dispose() {} }
    case 'sqlite': {
      const url = join(tmpdir(), `${uniqueTableName(`okrel_${name}`)}.db`)
      const dispose = () => {
        for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${url}${suffix}`, { force: true })
      }
      return { dialect, url, dispose }
    }
    default:
      throw new Error(`[outboxkit] [reliability] unknown dialect ${JSON.stringify(dialect)}`)
  }
}

/**
 * Creates the tables of a run named after `name` on the `dialect` test database and a fleet whose
 * relays (on the matching backend) use `relay` and `handler` (merged over CI-friendly defaults).
 * With `pooler` (PostgreSQL: the URL of a pooler in front of the same database) the producers'
 * `producerDb` and the relays' backends go through it; the bookkeeping and the relays' side
 * effects stay on direct connections.
 */
export async function fleetFixture(
  dialect: OutboxDialect,
  name: string,
  overrides: {
    relay?: Partial<RelayWorkerConfig['relay']>
    handler?: Partial<RelayWorkerConfig['handler']>
    pooler?: string
    /** The outbox's transport; with `'wal'` the run's slot is dropped by `close()`. */
    transport?: 'table' | 'wal'
    /** Topics declared ordered, each handled by the relays like `work`. */
    orderedTopics?: readonly string[]
    inbox?: RelayWorkerConfig['inbox']
    /** PostgreSQL: the relays' driver (`pgBackend` or `postgresJsBackend`). Default `'pg'`. */
    pgDriver?: RelayWorkerConfig['pgDriver']
  } & Pick<RelayFleetOptions, 'restartOnDeath'> = {},
): Promise<FleetFixture> {
  const target = testTarget(dialect, name)
  const prefix = `okrel_${name}_${process.pid}_${++runs}`
  const tables = ledgerTables(prefix)
  const db = await openLedgerDb(target, { max: 8 })
  const transport = overrides.transport ?? 'table'
  const orderedTopics = overrides.orderedTopics ?? []
  const outbox = await createLedger(db, tables, { transport, orderedTopics })
  const { pooler } = overrides
  const producerDb = pooler === undefined ? db : await openLedgerDb({ dialect, url: pooler }, { max: 4 })
  const fleet = new RelayFleet({
    db,
    tables,
    restartOnDeath: overrides.restartOnDeath ?? false,
    config: (n) => ({
      dialect,
      url: target.url,
      ...(pooler === undefined ? {} : { backendUrl: pooler }),
      ...(overrides.pgDriver ? { pgDriver: overrides.pgDriver } : {}),
      tables,
      transport,
      orderedTopics,
      applicationName: `${prefix.slice(0, 50)}_r${n}`,
      commandTimeoutMs: 15_000,
      relay: {
        concurrency: 5,
        batchSize: 5,
        leaseMs: 2_500,
        pollIntervalMs: 200,
        maxAttempts: 50,
        retry: { baseMs: 20, maxMs: 500 },
        notify: true,
        ...overrides.relay,
      },
      handler: { failRate: 0, retryRate: 0, retryMaxDelayMs: 0, sleepMs: [0, 0], ...overrides.handler },
      ...(overrides.inbox ? { inbox: overrides.inbox } : {}),
      graceMs: 5_000,
    }),
  })
  return {
    db,
    producerDb,
    tables,
    outbox,
    fleet,
    async close() {
      await fleet.stop(5_000).catch(() => {})
      if (transport === 'wal') await dropSlotWhenIdle(db, outbox)
      if (producerDb !== db) await producerDb.close()
      await dropLedger(db, tables).catch(() => {})
      await db.close()
      target.dispose()
    },
  }
}

/** Drops the run's replication slot once no relay reads it (a forgotten slot retains WAL on the shared server). */
async function dropSlotWhenIdle(db: LedgerDb, outbox: Outbox): Promise<void> {
  const wal = db.backend().wal
  if (!wal) return
  await pollUntil(async () => (await wal.slotStats(outbox))?.active !== true, {
    timeoutMs: 30_000,
    what: 'the replication slot to be released',
  }).catch(() => {})
  await wal.dropSlot(outbox).catch(() => {})
}
