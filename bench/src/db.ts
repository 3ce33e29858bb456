import pg from 'pg'

/** The server the bench runs on: DATABASE_URL, else the local test server. */
export function serverUrl(): string {
  return process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
}

/** The bench's own database name. */
export const BENCH_DATABASE = process.env.BENCH_DATABASE ?? 'outboxkit_bench'

/** `url` with its database replaced by `database`. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

/** The URL of the bench database (created by {@link ensureBenchDatabase}). */
export function benchUrl(): string {
  return withDatabase(serverUrl(), BENCH_DATABASE)
}

/** Creates the bench database on the server if it is missing, so other databases are not disturbed. */
export async function ensureBenchDatabase(): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl() })
  await client.connect()
  try {
    const { rows } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [BENCH_DATABASE])
    if (rows.length === 0) await client.query(`CREATE DATABASE "${BENCH_DATABASE.replace(/"/g, '""')}"`)
  } finally {
    await client.end()
  }
}

/** A small pool on the bench database for setup and inspection (never timed). */
export function adminPool(max = 2): pg.Pool {
  const pool = new pg.Pool({ connectionString: benchUrl(), max })
  pool.on('error', () => {})
  return pool
}

/** Runs one statement on the pool and returns its rows. */
export async function q<T = Record<string, unknown>>(
  pool: pg.Pool,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  return (await pool.query(text, params)).rows as T[]
}
