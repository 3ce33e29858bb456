import { readFileSync } from 'node:fs'
import { expectOutboxError, rejection } from '@outboxkit/conformance'
import { migrate, type Outbox, type OutboxBackend } from '@outboxkit/core'
import { outboxMigrationSql, outboxPrismaModel, prismaDialect, publish, publishMany } from '@outboxkit/prisma'
import { expect, test } from 'vitest'
import {
  shippedModelPathFor,
  shippedSqlPathFor,
  type TestPrismaClient,
  type TestProvider,
} from './prisma-client.js'

/** Thrown inside a `$transaction` callback to roll it back on purpose. */
export class Rollback extends Error {}

/** Swallows the {@link Rollback} a test threw on purpose; anything else fails the test. */
export function rolledBack(e: unknown): void {
  if (!(e instanceof Rollback)) throw e
}

/** Rows of the outbox table matching a SQL condition (with its placeholders), read outside Prisma. */
export type Count = (where?: string, params?: unknown[]) => Promise<number>

/**
 * Asserts `promise` rejects with the Prisma adapter's NOT_IN_TRANSACTION whose message matches
 * `mentions`; returns the error.
 */
export async function expectNotInTransaction(promise: Promise<unknown>, mentions: RegExp): Promise<Error> {
  const err = await rejection(promise)
  return expectOutboxError(err, 'NOT_IN_TRANSACTION', { source: 'prisma', message: [mentions] })
}

/** The root client, its transaction clients, nested and `$extends()` ones: all report `dialect`. */
export async function expectDialectEverywhere(prisma: TestPrismaClient, dialect: string): Promise<void> {
  expect(prismaDialect(prisma)).toBe(dialect)
  await prisma.$transaction(async (tx) => {
    expect(prismaDialect(tx)).toBe(dialect)
    await tx.$transaction(async (inner: unknown) => {
      expect(prismaDialect(inner)).toBe(dialect)
    })
  })
  const xprisma = prisma.$extends({ client: { $tenant: () => 't1' } })
  await xprisma.$transaction(async (tx: unknown) => {
    expect(prismaDialect(tx)).toBe(dialect)
  })
}

/** A transaction with a model write and a batch of messages, thrown away: neither is left. */
export async function expectRollbackWithModelWrites(
  prisma: TestPrismaClient,
  outbox: Outbox,
  { count, widgets }: { count: Count; widgets: () => Promise<number> },
): Promise<void> {
  const before = await widgets()
  await expect(
    prisma.$transaction(async (tx) => {
      await tx.widget.create({ data: { name: 'w-rollback' } })
      await publishMany(outbox, tx, [
        { topic: 'accepted-rb', payload: 1 },
        { topic: 'accepted-rb', payload: 2, dedupKey: 'rb-1' },
      ])
      throw new Rollback('roll back')
    }),
  ).rejects.toThrow('roll back')
  expect(await widgets()).toBe(before)
  expect(await count(`topic = 'accepted-rb'`)).toBe(0)
}

/** The root PrismaClient and a `$extends()` root client are refused, naming them; nothing is written. */
export async function expectRootClientsRefused(prisma: TestPrismaClient, outbox: Outbox, count: Count) {
  const before = await count()
  for (const handle of [prisma, prisma.$extends({ client: { $x: () => 1 } })]) {
    await expectNotInTransaction(
      publish(outbox, handle as never, { topic: 'root', payload: 1 }),
      /a PrismaClient \(the root client or a \$extends\(\) client\)/,
    )
    await expectNotInTransaction(
      publishMany(outbox, handle as never, [{ topic: 'root', payload: 1 }]),
      /autocommit/,
    )
  }
  expect(await count()).toBe(before)
}

/**
 * A tx kept after its transaction committed, and one kept after it rolled back (`inRollback` runs
 * inside that one), are refused by the scope marker. With `sent` (the statements the adapter's
 * connections were asked to send), also that they are refused before anything is sent.
 */
export async function expectEscapedTxRefused(
  prisma: TestPrismaClient,
  outbox: Outbox,
  { count, sent, inRollback }: { count: Count; sent?: string[]; inRollback?: (tx: any) => Promise<unknown> },
): Promise<void> {
  const refusedSilently = async (attempt: () => Promise<unknown>) => {
    if (sent) sent.length = 0
    await expectNotInTransaction(attempt(), /already finished/)
    if (sent) expect(sent).toEqual([])
  }
  let escaped: any
  await prisma.$transaction(async (tx) => {
    escaped = tx
  })
  await refusedSilently(() => publish(outbox, escaped, { topic: 'escaped', payload: 1 }))
  await prisma
    .$transaction(async (tx) => {
      escaped = tx
      await inRollback?.(tx)
      throw new Rollback('roll back')
    })
    .catch(rolledBack)
  await refusedSilently(() => publishMany(outbox, escaped, [{ topic: 'escaped', payload: 1 }]))
  expect(await count(`topic = 'escaped'`)).toBe(0)
}

/**
 * A nested tx kept after its savepoint ended is refused while the outer transaction goes on and
 * commits its own message (`idIs`: the dialect's `id = <placeholder>`).
 */
export async function expectEscapedNestedTxRefused(
  prisma: TestPrismaClient,
  outbox: Outbox,
  { count, idIs }: { count: Count; idIs: string },
): Promise<void> {
  const kept = await prisma.$transaction(async (tx) => {
    let nested: any
    await tx.$transaction(async (inner: unknown) => {
      nested = inner
    })
    await expectNotInTransaction(
      publish(outbox, nested, { topic: 'nested-escaped', payload: 1 }),
      /nested \$transaction client whose scope already finished/,
    )
    return publish(outbox, tx, { topic: 'nested-outer', payload: 1 })
  })
  expect(await count(idIs, [kept.id])).toBe(1)
  expect(await count(`topic = 'nested-escaped'`)).toBe(0)
}

/** Publishing to a table that does not exist is a DATABASE error naming it. */
export async function expectMissingTableError(prisma: TestPrismaClient, missing: Outbox): Promise<void> {
  const err = await rejection(prisma.$transaction((tx) => publish(missing, tx, { topic: 'x', payload: 1 })))
  expectOutboxError(err, 'DATABASE', { message: [/no_such_table/] })
}

/**
 * Messages of an ordered topic are numbered per key in commit order (`seqOf` reads a row's `seq`);
 * `backend` migrates the ordered outbox first and is closed.
 */
export async function expectOrderedSeq(
  prisma: TestPrismaClient,
  ordered: Outbox,
  { backend, seqOf }: { backend: OutboxBackend; seqOf: (id: string) => Promise<unknown> },
): Promise<void> {
  try {
    await migrate(ordered, backend)
  } finally {
    await backend.close()
  }
  const first = await prisma.$transaction((tx) =>
    publishMany(ordered, tx, [
      { topic: 'ledger', key: 'a', payload: 1 },
      { topic: 'ledger', key: 'a', payload: 2 },
      { topic: 'ledger', key: 'b', payload: 3 },
      { topic: 'other', key: 'a', payload: 4 },
    ]),
  )
  const second = await prisma.$transaction((tx) =>
    publish(ordered, tx, { topic: 'ledger', key: 'a', payload: 5 }),
  )
  expect(await Promise.all([...first, second].map((r) => seqOf(r.id)))).toEqual([1, 2, 1, null, 3])
}

/** The shipped model and SQL files of `provider` are what the helpers return, and the SQL carries `ddl`. */
export function expectShippedFiles(
  provider: Exclude<TestProvider, 'postgresql'>,
  outbox: Outbox,
  ddl: string,
) {
  expect(readFileSync(shippedModelPathFor(provider), 'utf8')).toBe(outboxPrismaModel(outbox, { provider }))
  expect(readFileSync(shippedSqlPathFor(provider), 'utf8')).toBe(outboxMigrationSql(outbox, { provider }))
  expect(outboxMigrationSql(outbox, { provider })).toContain(ddl)
}

/**
 * Publishes one message with every field and reads it back through the shipped model of the
 * generated client: the columns Prisma sees (`payload` and `headers` as the dialect stores them).
 * Returns the row for the dialect's own checks of its dates.
 */
export async function readPublishedThroughModel(
  prisma: TestPrismaClient,
  outbox: Outbox,
  { payload, headers }: { payload: unknown; headers: unknown },
): Promise<any> {
  const { id } = await prisma.$transaction((tx) =>
    publish(outbox, tx, {
      topic: 'model',
      payload: { n: 1 },
      key: 'k',
      headers: { a: 'b' },
      dedupKey: 'model-1',
    }),
  )
  const row = await prisma.outboxMessage.findUnique({ where: { id } })
  expect(row).toMatchObject({
    id,
    topic: 'model',
    key: 'k',
    payload,
    headers,
    state: 'pending',
    attempts: 0,
    dedupKey: 'model-1',
    lastError: null,
    seq: null, // only messages of ordered topics are numbered
  })
  return row
}

/** The argument of a `$allOperations` query extension, as the tests use it. */
export interface AllOperations {
  operation: string
  args: any
  query: (args: unknown) => unknown
}

/**
 * The handle refusals the MySQL and SQLite files share, as tests of the `describe` this is called
 * in: the root clients, a tx kept after its transaction, a nested tx kept after its savepoint
 * (`client`: the file's PrismaClient, made before all tests; ids compared with `id = ?`).
 */
export function testKeptHandleRefusals(client: () => TestPrismaClient, outbox: Outbox, count: Count): void {
  test('the root PrismaClient and a $extends() root client; nothing is written', () =>
    expectRootClientsRefused(client(), outbox, count))

  test('a tx kept after its transaction committed, or rolled back, by the scope marker', () =>
    expectEscapedTxRefused(client(), outbox, { count }))

  test('a nested tx kept after its savepoint ended, while the outer transaction goes on', () =>
    expectEscapedNestedTxRefused(client(), outbox, { count, idIs: 'id = ?' }))
}
