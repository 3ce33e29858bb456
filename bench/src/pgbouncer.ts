import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const SCRIPT = fileURLToPath(new URL('../../scripts/ensure-pgbouncer.sh', import.meta.url))

/** The bench's PgBouncer: its URL to the bench database, or why there is none. */
export type BenchPgBouncer = { url: string; dir: string } | { skipped: string }

/**
 * The directory of the bench's PgBouncer: `BENCH_PGBOUNCER_DIR`, else the tests' directory
 * (`OUTBOXKIT_PGBOUNCER_DIR`, default /tmp/outboxkit-pgbouncer) with `-bench` appended. Its own
 * directory, so the tests' PgBouncer (configured for the test database) is never reconfigured.
 */
export function benchPgBouncerDir(): string {
  return (
    process.env.BENCH_PGBOUNCER_DIR ??
    `${process.env.OUTBOXKIT_PGBOUNCER_DIR ?? '/tmp/outboxkit-pgbouncer'}-bench`
  )
}

/**
 * Starts (or reuses) a PgBouncer in front of the bench database with scripts/ensure-pgbouncer.sh:
 * transaction mode, pool 3, as the tests use it. The script maps the database of the
 * `DATABASE_URL` it is given, so it gets `benchDatabaseUrl`; it listens at `PGBOUNCER_PORT`
 * (default 6432) or the next free port, and keeps its files in {@link benchPgBouncerDir}.
 * Resolves to `{ skipped }` with the script's reason when PgBouncer cannot be had.
 */
export function ensureBenchPgBouncer(benchDatabaseUrl: string): Promise<BenchPgBouncer> {
  const dir = benchPgBouncerDir()
  return new Promise((resolve) => {
    execFile(
      'bash',
      [SCRIPT],
      {
        env: { ...process.env, DATABASE_URL: benchDatabaseUrl, OUTBOXKIT_PGBOUNCER_DIR: dir },
        timeout: 120_000,
      },
      (err, stdout, stderr) => {
        const url = stdout.trim().split('\n').pop() ?? ''
        if (!err && url.startsWith('postgres')) return resolve({ url, dir })
        const reason = stderr.trim().split('\n').pop() || (err?.message ?? 'no URL printed')
        resolve({ skipped: `scripts/ensure-pgbouncer.sh: ${reason}` })
      },
    )
  })
}

/** Stops the PgBouncer of `dir` (SIGTERM to the pid in its pidfile), if it runs. */
export function stopBenchPgBouncer(dir: string): void {
  try {
    const pid = Number(readFileSync(`${dir}/pgbouncer.pid`, 'utf8').trim())
    if (pid > 0) process.kill(pid, 'SIGTERM')
  } catch {
    // Not running (or already gone): nothing to stop.
  }
}
