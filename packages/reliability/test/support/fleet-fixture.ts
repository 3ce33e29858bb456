import { testDatabaseUrl } from '@outboxkit/conformance'
import type { Outbox } from '@outboxkit/core'
import type pg from 'pg'
import { quietPool } from '../../src/database.js'
import { createLedger, dropLedger, type LedgerTables, ledgerTables } from '../../src/ledger.js'
import { RelayFleet, type RelayFleetOptions } from '../../src/relay-fleet.js'
import type { RelayWorkerConfig } from '../../src/relay-worker-config.js'

/** A run's tables, a bookkeeping pool and a fleet of relay processes, torn down by `close()`. */
export interface FleetFixture {
  readonly pool: pg.Pool
  readonly tables: LedgerTables
  readonly outbox: Outbox
  readonly fleet: RelayFleet
  close(): Promise<void>
}

let runs = 0

/**
 * Creates the tables of a run named after `name` and a fleet whose relays use `relay` and
 * `handler` (merged over CI-friendly defaults).
 */
export async function fleetFixture(
  name: string,
  overrides: {
    relay?: Partial<RelayWorkerConfig['relay']>
    handler?: Partial<RelayWorkerConfig['handler']>
  } & Pick<RelayFleetOptions, 'restartOnDeath'> = {},
): Promise<FleetFixture> {
  const url = testDatabaseUrl()
  const prefix = `okrel_${name}_${process.pid}_${++runs}`
  const tables = ledgerTables(prefix)
  const pool = quietPool({ connectionString: url, max: 8 })
  const outbox = await createLedger(pool, tables)
  const fleet = new RelayFleet({
    pool,
    tables,
    restartOnDeath: overrides.restartOnDeath ?? false,
    config: (n) => ({
      url,
      tables,
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
      graceMs: 5_000,
    }),
  })
  return {
    pool,
    tables,
    outbox,
    fleet,
    async close() {
      await fleet.stop(5_000).catch(() => {})
      await dropLedger(pool, tables).catch(() => {})
      await pool.end()
    },
  }
}
