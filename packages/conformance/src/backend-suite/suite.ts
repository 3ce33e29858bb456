import { defineOutbox, migrate, type Outbox, type OutboxBackend } from '@outboxkit/core'
import { afterAll, beforeAll, beforeEach } from 'vitest'
import { uniqueTableName } from '../database.js'
import { type OutboxDialect, type OutboxRowRead, type OutboxSql, outboxSql } from '../dialect-sql.js'
import type { BackendContext, BackendHarness } from './harness.js'

/** What the suite opens before its first test (its `beforeAll`); read it inside a test, not before. */
export interface OpenedBackendSuite {
  ctx: BackendContext
  sql: OutboxSql
  dialect: OutboxDialect
  backend: OutboxBackend
  outbox: Outbox
  table: string
}

/** The fields of the rows {@link BackendSuite.insert} writes. */
export interface InsertFields {
  topic?: string
  state?: 'pending' | 'processing' | 'delivered' | 'dead'
  attempts?: number
  availableInMs?: number
}

/** The claim options the tests vary; `b` claims through another backend instance. */
export interface ClaimOptions {
  topics?: string[]
  leaseMs?: number
  maxAttempts?: number
  b?: OutboxBackend
}

/** What `OutboxBackend.claim` returns. */
type ClaimedRows = ReturnType<OutboxBackend['claim']>

/** What every group of backend tests is given: the harness's name and the opened suite. */
export interface BackendSuite {
  /** The backend name, e.g. `'pg'`. */
  name: string
  /** Filled in by the suite's `beforeAll`. */
  opened: OpenedBackendSuite
  /** Writes `n` rows with raw SQL (payload `{ i }`, due a second ago unless told), returns their ids. */
  insert(n: number, fields?: InsertFields): Promise<string[]>
  /** One row of the suite's table by id, raw SQL. */
  row(id: string): Promise<OutboxRowRead | undefined>
  /** Claims up to `limit` rows of topic `t` (unless told) with a 30 s lease and 10 attempts. */
  claim(limit: number, opts?: ClaimOptions): ClaimedRows
}

const lease = 30_000

/**
 * Registers the suite's hooks in the current `describe` (`beforeAll`: setup and a fresh table;
 * `beforeEach`: migrate and clear it; `afterAll`: drop, close, teardown), and returns what the
 * groups of tests share.
 */
export function openBackendSuite(harness: BackendHarness): BackendSuite {
  const opened = {} as OpenedBackendSuite
  beforeAll(async () => {
    opened.ctx = await harness.setup()
    opened.dialect = opened.ctx.dialect ?? 'postgres'
    opened.sql = outboxSql(opened.dialect, (text, params) => opened.ctx.inspect(text, params))
    opened.backend = opened.ctx.backend()
    opened.table = uniqueTableName(`be_${harness.name}`)
    opened.outbox = defineOutbox({ table: opened.table })
  })
  beforeEach(async () => {
    await migrate(opened.outbox, opened.backend)
    await opened.sql.clear(opened.table)
  })
  afterAll(async () => {
    await opened.sql?.drop(opened.table).catch(() => {})
    await opened.backend?.close()
    await opened.ctx?.teardown()
  })
  return {
    name: harness.name,
    opened,
    insert: (n, fields) => insertRows(opened, n, fields),
    row: (id) => opened.sql.row(opened.table, id),
    claim: (limit, opts) => claimRows(opened, limit, opts),
  }
}

function insertRows(opened: OpenedBackendSuite, n: number, fields: InsertFields = {}): Promise<string[]> {
  return opened.sql.insert(
    opened.table,
    Array.from({ length: n }, (_, i) => ({
      topic: fields.topic ?? 't',
      payload: { i: i + 1 },
      state: fields.state ?? 'pending',
      attempts: fields.attempts ?? 0,
      availableInMs: fields.availableInMs ?? -1000,
    })),
  )
}

function claimRows(opened: OpenedBackendSuite, limit: number, opts: ClaimOptions = {}): ClaimedRows {
  return (opts.b ?? opened.backend).claim({
    table: opened.outbox.table,
    topics: opts.topics ?? ['t'],
    limit,
    leaseMs: opts.leaseMs ?? lease,
    maxAttempts: opts.maxAttempts ?? 10,
  })
}
