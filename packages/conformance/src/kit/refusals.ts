import type { Outbox, ProcessOnceFn, PublishFn, PublishManyFn } from '@outboxkit/core'
import { expect } from 'vitest'
import { expectOutboxError, settle } from './outcomes.js'

/** An adapter's (or one of its paths') `publish` and `publishMany`, and its `processOnce` when given. */
export interface Publisher {
  publish: PublishFn<any>
  publishMany: PublishManyFn<any>
  processOnce?: ProcessOnceFn<any>
}

/** What {@link expectPublishRefused} expects of each refusal. */
export interface RefusalExpectation {
  /** The error code. Default `NOT_IN_TRANSACTION`. */
  code?: string
  /** Patterns the message must match (a string: must contain it). */
  message: (RegExp | string)[]
  /** Names the path in assertion messages when a test checks several. */
  label?: string
}

/**
 * Asserts that `publish` (one message) and `publishMany` (a batch of one) on `handle` both reject
 * with an `OutboxError` of `expected.code` whose message matches every `expected.message` pattern.
 * What was (not) written and sent stays for the caller to check.
 */
export async function expectPublishRefused(
  publisher: Publisher,
  outbox: Outbox<any>,
  handle: unknown,
  expected: RefusalExpectation,
): Promise<void> {
  const { code = 'NOT_IN_TRANSACTION', message, label } = expected
  for (const attempt of [
    () => publisher.publish(outbox, handle as never, { topic: 'refused', payload: 1 }),
    () => publisher.publishMany(outbox, handle as never, [{ topic: 'refused', payload: 1 }]),
  ]) {
    expectOutboxError(await settle(attempt()), code, { message, ...(label ? { label } : {}) })
  }
}

/** What {@link expectUnawaitedPublishContained} drives. */
export interface UnawaitedPublish<TTx> {
  /** Runs `fn` in a transaction of the library: commit when it resolves, rollback when it throws. */
  transaction(fn: (tx: TTx) => Promise<void>): Promise<unknown>
  /** Publishes one message on `topic` in `tx` (`rollingBack`: in the transaction that will throw). */
  publish(tx: TTx, topic: string, rollingBack: boolean): Promise<unknown>
  /** `topic` of the committed transaction; `<topic>-rb` is the one rolled back. */
  topic: string
  /** Rows on `topic`, read outside the transactions. */
  count(topic: string): number | Promise<number>
  /** The adapter's assertion on a refused publish. */
  expectRefused(err: Error): void
}

/**
 * A publish not awaited before the transaction's callback returns (or throws) never outlives the
 * transaction: it either ran before the library's COMMIT / ROLLBACK (and shares its fate) or it
 * was refused, never written on its own.
 */
export async function expectUnawaitedPublishContained<TTx>(p: UnawaitedPublish<TTx>): Promise<void> {
  let pending!: Promise<Error | undefined>
  await settle(
    p.transaction(async (tx) => {
      pending = settle(p.publish(tx, `${p.topic}-rb`, true))
      throw new Error('roll back')
    }),
  )
  const rolledBack = await pending
  if (rolledBack) p.expectRefused(rolledBack)
  expect(await p.count(`${p.topic}-rb`)).toBe(0)
  await p.transaction(async (tx) => {
    pending = settle(p.publish(tx, p.topic, false))
  })
  const committed = await pending
  // Either it ran before the library's COMMIT (and committed with it) or it was refused: never alone.
  if (committed) p.expectRefused(committed)
  expect(await p.count(p.topic)).toBe(committed ? 0 : 1)
}
