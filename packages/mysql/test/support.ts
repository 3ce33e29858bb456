import { type Inspector, mysqlInspector, testMysqlUri, uniqueTableName } from '@outboxkit/conformance'
import { type DefineOutboxOptions, defineOutbox, isOutboxError, migrate, type Outbox } from '@outboxkit/core'
import { mysqlOutboxNames } from '@outboxkit/core/adapter'
import { mysqlBackend } from '@outboxkit/mysql'
import mysql from 'mysql2/promise'
import { expect } from 'vitest'

/** A mysql2/promise pool on the test server (the code under test's side). */
export function testPool(options: mysql.PoolOptions = {}): mysql.Pool {
  const pool = mysql.createPool({ uri: testMysqlUri(), connectionLimit: 12, ...options })
  pool.on('connection', (c) => {
    ;(c as unknown as { on(e: string, f: () => void): void }).on('error', () => {})
  })
  return pool
}

/** Tables made by {@link MysqlFixture.outbox}, dropped (with their keys table) by {@link MysqlFixture.close}. */
export class MysqlFixture {
  readonly pool = testPool()
  readonly inspector: Inspector = mysqlInspector()
  readonly #tables: string[] = []

  /** Raw SQL on the inspector's own connection. */
  query(sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
    return this.inspector.query(sql, params)
  }

  /** A fresh outbox on a unique table, migrated through a `{ pool }` backend. */
  async outbox(prefix: string, options: Omit<DefineOutboxOptions, 'table'> = {}): Promise<Outbox> {
    const table = uniqueTableName(`my_${prefix}`)
    this.#tables.push(table)
    const outbox: Outbox = defineOutbox({ ...options, table })
    await migrate(outbox, mysqlBackend({ pool: this.pool }))
    return outbox
  }

  async count(outbox: Outbox, where = 'TRUE', params: unknown[] = []): Promise<number> {
    const [r] = await this.query(`SELECT COUNT(*) AS n FROM \`${outbox.table.name}\` WHERE ${where}`, params)
    return Number(r!.n)
  }

  async close(): Promise<void> {
    for (const t of this.#tables) {
      await this.query(`DROP TABLE IF EXISTS \`${t}\``).catch(() => {})
      const { keysTable } = mysqlOutboxNames({ schema: null, name: t, display: t })
      await this.query(`DROP TABLE IF EXISTS \`${keysTable}\``).catch(() => {})
    }
    await this.inspector.close()
    await this.pool.end()
  }
}

/** Statements the server counted on this session so far (`Questions`, which counts itself too). */
export async function questions(conn: mysql.Connection): Promise<number> {
  const [rows] = await conn.query(`SHOW SESSION STATUS WHERE Variable_name = 'Questions'`)
  return Number((rows as { Value: string }[])[0]!.Value)
}

/** Round trips `fn` made on `conn`: the difference in `Questions`, less the SHOW that reads it. */
export async function roundTrips(conn: mysql.Connection, fn: () => Promise<unknown>): Promise<number> {
  const before = await questions(conn)
  await fn()
  return (await questions(conn)) - before - 1
}

/** Awaits `promise` and checks it failed with an OutboxError of `code` from the mysql adapter. */
export async function expectOutboxError(promise: Promise<unknown>, code: string): Promise<Error> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err, `expected OutboxError ${code}`).toBeDefined()
  expect(isOutboxError(err), String(err)).toBe(true)
  expect((err as { code: string }).code, String(err)).toBe(code)
  expect((err as Error).message).toContain('[outboxkit] [mysql]')
  return err as Error
}
