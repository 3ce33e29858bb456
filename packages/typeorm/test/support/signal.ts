import { expectOutboxError, settle } from '@outboxkit/conformance'
import type { Outbox } from '@outboxkit/core'
import { publish } from '@outboxkit/typeorm'
import type { DataSource, EntityManager, Logger } from 'typeorm'
import { expect } from 'vitest'

/** A TypeORM logger that records every query it is told about (and ignores the rest). */
export function recordingLogger(): { logged: string[]; logger: Logger } {
  const logged: string[] = []
  const ignore = () => {}
  const logger: Logger = {
    logQuery: (query) => void logged.push(query),
    logQueryError: ignore,
    logQuerySlow: ignore,
    logSchemaBuild: ignore,
    logMigration: ignore,
    log: ignore,
  }
  return { logged, logger }
}

/**
 * Asserts `err` is the TypeORM adapter's `OutboxError` with `code` (default NOT_IN_TRANSACTION);
 * `message` adds patterns the message must match.
 */
export function expectRefused(
  err: unknown,
  code = 'NOT_IN_TRANSACTION',
  message: (RegExp | string)[] = [],
): void {
  expectOutboxError(err, code, { source: 'typeorm', message })
}

/** Counts the outbox rows on a topic (synchronously on better-sqlite3). */
type TopicCount = (topic: string) => number | Promise<number>

/**
 * A raw COMMIT inside `dataSource.transaction()` leaves TypeORM's flags saying the transaction is
 * open; publish must see the truth from the driver (`reason`: what its refusal says) and write
 * nothing on `topic` (default `'raw-commit'`).
 */
export async function expectRawCommitRefused(
  dataSource: DataSource,
  outbox: Outbox,
  { topic = 'raw-commit', reason, count }: { topic?: string; reason: string | string[]; count: TopicCount },
): Promise<void> {
  await dataSource.transaction(async (manager) => {
    await manager.query('COMMIT')
    expect(manager.queryRunner!.isTransactionActive).toBe(true)
    const err = await publish(outbox, manager, { topic, payload: 1 }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expectRefused(err, 'NOT_IN_TRANSACTION', [reason].flat())
    await manager.query('BEGIN') // so TypeORM's own COMMIT has a transaction to end
  })
  expect(await count(topic)).toBe(0)
}

/**
 * TypeORM's logger sees the publish statement (an INSERT into the outbox's double-quoted table)
 * between TypeORM's own `begin` statement and COMMIT: the one statement publish sends.
 */
export async function expectLoggedAlone(
  dataSource: DataSource,
  outbox: Outbox,
  { logged, begin }: { logged: string[]; begin: string },
): Promise<void> {
  logged.length = 0
  await dataSource.transaction((manager) => publish(outbox, manager, { topic: 'logged', payload: 1 }))
  expect(logged).toHaveLength(3)
  expect(logged[0]).toBe(begin)
  expect(logged[1]).toContain(`INSERT INTO "${outbox.table.name}"`)
  expect(logged[2]).toBe('COMMIT')
}

/**
 * An uncommitted row with the same dedupKey makes the publish wait on its unique index until the
 * server's limit, which `withTimeout` sets around `publishHeld` on the transaction's manager: the
 * publish fails with TIMEOUT, its transaction rolls back, and nothing stays on topic 'timeout'.
 */
export async function expectHeldRowTimeout(
  dataSource: DataSource,
  outbox: Outbox,
  {
    withTimeout,
    count,
  }: {
    withTimeout: (manager: EntityManager, publishHeld: () => Promise<unknown>) => Promise<void>
    count: TopicCount
  },
): Promise<void> {
  const holder = dataSource.createQueryRunner()
  try {
    await holder.startTransaction()
    await publish(outbox, holder, { topic: 'timeout', payload: 1, dedupKey: 'held' })
    const err = await settle(
      dataSource.transaction((manager) =>
        withTimeout(manager, () =>
          publish(outbox, manager, { topic: 'timeout', payload: 2, dedupKey: 'held' }),
        ),
      ),
    )
    expectRefused(err, 'TIMEOUT')
  } finally {
    await holder.rollbackTransaction()
    await holder.release()
  }
  expect(await count('timeout')).toBe(0)
}
