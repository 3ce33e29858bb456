import { isOutboxError } from '@outboxkit/core'
import { expect } from 'vitest'

/**
 * The error `promise` rejects with, or undefined when it resolves. A handler is attached at once,
 * so no rejection goes unhandled while the test does something else.
 */
export function settle(
  promise: Promise<unknown>,
): Promise<(Error & { code?: string; cause?: any }) | undefined> {
  return promise.then(
    () => undefined,
    (err: unknown) => err as Error & { code?: string },
  )
}

/** The error `promise` rejects with; fails the test when it resolves or rejects with a non-Error. */
export async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string; cause?: any }> {
  const err = await settle(promise)
  expect(err, 'expected a rejection').toBeInstanceOf(Error)
  return err!
}

/** What `fn` throws (synchronously), or undefined when it returns. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  return undefined
}

/** Runs `fn` and returns what it threw and how long it took; throws when it succeeds. */
export async function failure(fn: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const t0 = Date.now()
  try {
    await fn()
  } catch (error) {
    return { error, ms: Date.now() - t0 }
  }
  throw new Error('expected a failure, got success')
}

/** What {@link expectOutboxError} checks besides the code. */
export interface OutboxErrorExpectation {
  /** The `[outboxkit] [<source>]` prefix the message must contain. */
  source?: string
  /** Patterns the message must match (a string: must contain it). */
  message?: (RegExp | string)[]
  /** Prefixes the assertion messages, when a test checks several paths. */
  label?: string
}

/** Asserts `err` is an `OutboxError` with `code`, and what `expected` adds; returns it as an Error. */
export function expectOutboxError(err: unknown, code: string, expected: OutboxErrorExpectation = {}): Error {
  const what = expected.label ? `${expected.label}: ${String(err)}` : String(err)
  expect(isOutboxError(err), what).toBe(true)
  expect((err as { code: string }).code, what).toBe(code)
  const message = (err as Error).message
  if (expected.source) expect(message, expected.label).toContain(`[outboxkit] [${expected.source}]`)
  for (const m of expected.message ?? []) {
    if (typeof m === 'string') expect(message, expected.label).toContain(m)
    else expect(message, expected.label).toMatch(m)
  }
  return err as Error
}

/**
 * What `fn` throws, checked to be an `INVALID_CONFIG` OutboxError whose message starts with
 * `[outboxkit] [<source>] `: its message, for the test to check what it names.
 */
export function invalidConfigMessage(source: string, fn: () => unknown): string {
  const err = thrown(fn)
  expect(isOutboxError(err, 'INVALID_CONFIG'), String(err)).toBe(true)
  expect((err as Error).message.startsWith(`[outboxkit] [${source}] `), (err as Error).message).toBe(true)
  return (err as Error).message
}
