// pgBackend checks its options instead of guessing: an unknown name (a typo, an option of another
// backend) is INVALID_CONFIG naming it and the closest valid one, and pg.Pool's own options pass.
import { testDatabaseUrl } from '@outboxkit/conformance'
import { isOutboxError } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, describe, expect, test } from 'vitest'

function refusal(fn: () => unknown): string {
  let err: unknown
  try {
    fn()
  } catch (e) {
    err = e
  }
  expect(isOutboxError(err, 'INVALID_CONFIG'), String(err)).toBe(true)
  expect((err as Error).message).toMatch(/^\[outboxkit\] \[pg\] /)
  return (err as Error).message
}

describe('pgBackend options', () => {
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 1 })
  afterAll(() => pool.end())
  const connectionString = testDatabaseUrl()

  test.each<[string, Record<string, unknown>, string, string | undefined]>([
    [
      'a typo of commandTimeoutMs',
      { connectionString, comandTimeoutMs: 5_000 },
      'comandTimeoutMs',
      'commandTimeoutMs',
    ],
    ['the wrong case', { connectionString, commandTimeoutMS: 5_000 }, 'commandTimeoutMS', 'commandTimeoutMs'],
    ['a singular', { connectionString, preparedStatement: false }, 'preparedStatement', 'preparedStatements'],
    [
      'a typo of a pg.Pool option',
      { connectionString, idleTimeoutMilis: 1_000 },
      'idleTimeoutMilis',
      'idleTimeoutMillis',
    ],
    ['an option of another backend', { connectionString, busyTimeoutMs: 5_000 }, 'busyTimeoutMs', undefined],
  ])('{ connectionString } with %s → INVALID_CONFIG', (_label, options, name, closest) => {
    const message = refusal(() => pgBackend(options as never))
    expect(message).toContain(`unknown option "${name}" for pgBackend({ connectionString })`)
    if (closest) expect(message).toContain(`(did you mean "${closest}"?)`)
    else expect(message).not.toContain('did you mean')
    expect(message).toContain(
      'Valid options: commandTimeoutMs, preparedStatements and the options of pg.Pool',
    )
  })

  test('{ pool } takes only commandTimeoutMs and preparedStatements: a pool option is refused, not ignored', () => {
    const message = refusal(() => pgBackend({ pool, max: 5 } as never))
    expect(message).toContain('unknown option "max" for pgBackend({ pool })')
    expect(message).toContain('Valid options: commandTimeoutMs, pool, preparedStatements.')
    expect(refusal(() => pgBackend({ pool, comandTimeoutMs: 1 } as never))).toContain(
      '(did you mean "commandTimeoutMs"?)',
    )
  })

  test('commandTimeoutMs must be a positive number of milliseconds', () => {
    for (const commandTimeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '5000']) {
      expect(refusal(() => pgBackend({ pool, commandTimeoutMs } as never))).toContain(
        'commandTimeoutMs must be a finite number of milliseconds > 0',
      )
    }
  })

  test("pg.Pool's own options and outboxkit's are accepted", async () => {
    const backend = pgBackend({
      connectionString,
      max: 2,
      idleTimeoutMillis: 1_000,
      application_name: 'outboxkit-options-test',
      ssl: false,
      commandTimeoutMs: 5_000,
      preparedStatements: false,
    })
    await backend.close()
    await pgBackend({ pool, commandTimeoutMs: 5_000, preparedStatements: true }).close()
  })
})
