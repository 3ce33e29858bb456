import {
  defineOutbox,
  isOutboxError,
  migrate,
  type Outbox,
  type PublishFn,
  type PublishManyFn,
} from '@outboxkit/core'
import { afterAll, beforeAll, expect } from 'vitest'
import { uniqueTableName } from '../database.js'
import { type OutboxRowRead, type OutboxSql, outboxSql } from '../dialect-sql.js'
import { settle } from '../kit/outcomes.js'
import type { PublishContext, PublishHarness } from './harness.js'

/** What the suite opens before its first test (its `beforeAll`); read it inside a test, not before. */
export interface OpenedPublishSuite<TTx> {
  ctx: PublishContext<TTx>
  sql: OutboxSql
  outbox: Outbox
  table: string
}

/** What every group of publish tests is given: the harness's functions and the opened suite. */
export interface PublishSuite<TTx> {
  /** The adapter name as it appears in error messages. */
  name: string
  publish: PublishFn<TTx>
  publishMany: PublishManyFn<TTx>
  /** Filled in by the suite's `beforeAll`. */
  opened: OpenedPublishSuite<TTx>
  /** `count(*)` of the suite's table, raw SQL. */
  count(filter?: { id?: string; topic?: string }): Promise<number>
  /** One row of the suite's table by id, raw SQL. */
  rowOf(id: string): Promise<OutboxRowRead | undefined>
}

/** Thrown inside a transaction to roll it back. */
export class Rollback extends Error {}

/** Expects `promise` to reject with an `OutboxError` of `code`, and returns that error. */
export async function expectCode(promise: Promise<unknown>, code: string): Promise<Error> {
  const err = await settle(promise)
  expect(err, `expected OutboxError ${code}`).toBeDefined()
  expect(isOutboxError(err), String(err)).toBe(true)
  expect((err as { code: string }).code).toBe(code)
  return err as Error
}

/**
 * Registers the suite's `beforeAll` (setup, a fresh table, migrate) and `afterAll` (drop, teardown)
 * in the current `describe`, and returns what the groups of tests share.
 */
export function openPublishSuite<TTx>(harness: PublishHarness<TTx>): PublishSuite<TTx> {
  const { name, publish, publishMany } = harness
  const opened = {} as OpenedPublishSuite<TTx>
  beforeAll(async () => {
    opened.ctx = await harness.setup()
    opened.sql = outboxSql(opened.ctx.dialect ?? 'postgres', (text, params) =>
      opened.ctx.inspect(text, params),
    )
    opened.table = uniqueTableName(name)
    opened.outbox = defineOutbox({ table: opened.table })
    await migrate(opened.outbox, opened.ctx.backend)
  })
  afterAll(async () => {
    await opened.sql?.drop(opened.table).catch(() => {})
    await opened.ctx?.teardown()
  })
  return {
    name,
    publish,
    publishMany,
    opened,
    count: (filter = {}) => opened.sql.count(opened.table, filter),
    rowOf: (id) => opened.sql.row(opened.table, id),
  }
}
