import pg from 'pg'

/**
 * The PostgreSQL server the tests use: `DATABASE_URL` when set, else the local server at
 * 127.0.0.1:5432 (database `test`, trust auth).
 */
export function testDatabaseUrl(): string {
  return process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
}

/** Raw SQL on a connection of its own: how the suites look at the database. */
export interface Inspector {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
  close(): Promise<void>
}

/** An {@link Inspector} on its own pg pool (a separate connection from the code under test). */
export function serverInspector(url = testDatabaseUrl()): Inspector {
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  pool.on('error', () => {})
  return {
    async query<T>(text: string, params: unknown[] = []) {
      return (await pool.query(text, params)).rows as T[]
    },
    close: () => pool.end(),
  }
}

let counter = 0
/** A table name unique to this process and call, e.g. `ok_kysely_4821_3`. */
export function uniqueTableName(prefix: string): string {
  counter++
  return `ok_${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${process.pid}_${counter}`
}

/** Polls `check` every `intervalMs` until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  {
    timeoutMs = 10_000,
    intervalMs = 20,
    what = 'condition',
  }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value as NonNullable<T>
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}
