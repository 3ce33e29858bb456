// pgBackend checks its options instead of guessing: an unknown name (a typo, an option of another
// backend) is INVALID_CONFIG naming it and the closest valid one, and pg.Pool's own options pass.
import { invalidConfigMessage, testDatabaseUrl } from '@outboxkit/conformance'
import { pgBackend, pgPublisher, publish, publishMany } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, describe, expect, test } from 'vitest'

/** What `fn` throws: an INVALID_CONFIG error of the pg adapter; its message. */
const refusal = (fn: () => unknown): string => invalidConfigMessage('pg', fn)

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
      'Valid options: commandTimeoutMs, preparedStatements, listenConnectionString, listenProbeTimeoutMs and the options of pg.Pool',
    )
  })

  test("{ pool } takes only outboxkit's options: a pool option is refused, not ignored", () => {
    const message = refusal(() => pgBackend({ pool, max: 5 } as never))
    expect(message).toContain('unknown option "max" for pgBackend({ pool })')
    expect(message).toContain(
      'Valid options: commandTimeoutMs, listenConnectionString, listenProbeTimeoutMs, pool, preparedStatements.',
    )
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

  test('preparedStatements must be a boolean, listenConnectionString a non-empty string, listenProbeTimeoutMs a positive number of ms', () => {
    for (const preparedStatements of ['false', 0, 1]) {
      expect(refusal(() => pgBackend({ pool, preparedStatements } as never))).toContain(
        'preparedStatements must be true or false',
      )
    }
    for (const listenConnectionString of ['', 5432, {}]) {
      expect(refusal(() => pgBackend({ connectionString, listenConnectionString } as never))).toContain(
        'listenConnectionString must be a non-empty connection string',
      )
    }
    for (const listenProbeTimeoutMs of [0, -1, '2000']) {
      expect(refusal(() => pgBackend({ pool, listenProbeTimeoutMs } as never))).toContain(
        'listenProbeTimeoutMs must be a finite number of milliseconds > 0',
      )
    }
  })

  test('pgPublisher refuses an unknown option and a preparedStatements that is not a boolean', () => {
    expect(refusal(() => pgPublisher({ preparedStatement: true } as never))).toContain(
      'unknown option "preparedStatement" for pgPublisher(options) (did you mean "preparedStatements"?)',
    )
    expect(refusal(() => pgPublisher({ preparedStatements: 'yes' } as never))).toContain(
      'preparedStatements must be true or false',
    )
    expect(refusal(() => pgPublisher(null as never))).toContain('pgPublisher options must be an object')
    // The default is the package's own publish; named statements are another pair.
    expect(pgPublisher().publish).toBe(publish)
    expect(pgPublisher({ preparedStatements: false }).publishMany).toBe(publishMany)
    expect(pgPublisher({ preparedStatements: true }).publish).not.toBe(publish)
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
      listenConnectionString: connectionString,
      listenProbeTimeoutMs: 1_000,
    })
    await backend.close()
    await pgBackend({ pool, commandTimeoutMs: 5_000, preparedStatements: true }).close()
    await pgBackend({ pool, listenConnectionString: connectionString, listenProbeTimeoutMs: 500 }).close()
  })
})
