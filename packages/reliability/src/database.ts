import pg from 'pg'

/**
 * The PostgreSQL server the reliability runs use: `DATABASE_URL` when set, else the local server
 * at 127.0.0.1:5432 (database `test`, trust auth). Same rule as the conformance suite, kept here
 * so the soak script does not load the vitest-based conformance package.
 */
export function reliabilityDatabaseUrl(): string {
  return process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
}

/** A pg pool that never crashes the process on an idle client's error (server restart, kill). */
export function quietPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config)
  pool.on('error', () => {})
  return pool
}

/** Rows of one statement on `pool`. */
export async function sql<T = Record<string, any>>(
  pool: pg.Pool,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  return (await pool.query(text, params)).rows as T[]
}

/** Polls `check` every `intervalMs` until it returns a truthy value, or throws after `timeoutMs`. */
export async function pollUntil<T>(
  check: () => T | Promise<T>,
  { timeoutMs, intervalMs = 50, what }: { timeoutMs: number; intervalMs?: number; what: string },
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value as NonNullable<T>
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}

/** A uniformly random integer in [min, max]. */
export function randomInt(min: number, max: number): number {
  return min + Math.floor(Math.random() * (max - min + 1))
}
