import pg from 'pg'

/**
 * The PostgreSQL server the reliability runs use: `DATABASE_URL` when set, else the local server
 * at 127.0.0.1:5432 (database `test`, trust auth). Same rule as the conformance suite, kept here
 * so the relay worker processes do not load the vitest-based conformance package.
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

/**
 * Polls `check` every `intervalMs` until it returns a truthy value, or throws after `timeoutMs`:
 * the conformance kit's `waitFor`, with the bound and what is awaited always given. The kit is
 * loaded on the first call, so the relay worker processes (which import this module but never
 * poll) start without it.
 */
export async function pollUntil<T>(
  check: () => T | Promise<T>,
  { timeoutMs, intervalMs = 50, what }: { timeoutMs: number; intervalMs?: number; what: string },
): Promise<NonNullable<T>> {
  const { waitFor } = await import('@outboxkit/conformance')
  return waitFor(check, { timeoutMs, intervalMs, what })
}

/** A uniformly random integer in [min, max]. */
export function randomInt(min: number, max: number): number {
  return min + Math.floor(Math.random() * (max - min + 1))
}
