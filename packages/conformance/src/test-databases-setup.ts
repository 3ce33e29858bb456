import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'

import {
  type ChosenTestDatabase,
  dockerEngineReachable,
  selectTestDatabases,
  startTestContainer,
  TEST_CONTAINER_IMAGES,
  TEST_DATABASE_ENV,
  type TestDatabaseKind,
  tcpAnswers,
} from './test-databases.js'

/** What the setup hands to the tests with vitest's `provide`: the chosen URLs. */
export interface ProvidedTestDatabases {
  readonly postgres: string
  /** `null` when the run's dialects leave `mysql` out. */
  readonly mysql: string | null
}

declare module 'vitest' {
  export interface ProvidedContext {
    testDatabases: ProvidedTestDatabases
  }
}

/**
 * The vitest `globalSetup` of the repository (vitest.config.ts): chooses the test databases once,
 * before any worker starts (see {@link selectTestDatabases}), and hands them to the tests by
 * setting `DATABASE_URL` and `MYSQL_URL` in this process, whose environment every worker (and every
 * process a test spawns) inherits, so `testDatabaseUrl()` and `testMysqlUri()` read them. It also
 * `provide`s them as `testDatabases`. With no database to be had it prints the one message and
 * exits with code 1 before any test runs. Its teardown stops the containers it started.
 *
 * It also puts a PgBouncer in transaction mode in front of a local PostgreSQL
 * (scripts/ensure-pgbouncer.sh) and sets `PGBOUNCER_URL` for the pooled tests; when none can be had
 * it leaves `PGBOUNCER_URL` unset, sets `PGBOUNCER_SKIPPED` to why, and says so in one line.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const selection = await selectTestDatabases({
    env: process.env,
    answers: (host, port) => tcpAnswers(host, port),
    dockerReachable: dockerEngineReachable,
    startContainer: startTestContainer,
  })
  if (!selection.ok) {
    // The message is the whole story. Thrown, it would come after vitest's "No test files found"
    // and under an "Unhandled Error" banner; no worker has started yet, so exiting leaves nothing.
    console.error(`\n${selection.message}\n`)
    process.exit(1)
  }
  const chosen: [TestDatabaseKind, ChosenTestDatabase | null][] = [
    ['postgres', selection.postgres],
    ['mysql', selection.mysql],
  ]
  for (const [kind, db] of chosen) {
    if (db === null) continue
    process.env[TEST_DATABASE_ENV[kind]] = db.url
    if (db.source === 'container') {
      console.log(
        `[outboxkit] [test-databases] ${kind === 'postgres' ? 'PostgreSQL' : 'MariaDB'} runs in a container ` +
          `(${TEST_CONTAINER_IMAGES[kind]}) at ${db.url}`,
      )
    }
  }
  ensureWal(selection.postgres.url)
  choosePgBouncer(selection.postgres.url)
  ensureBrokers()
  project.provide('testDatabases', { postgres: selection.postgres.url, mysql: selection.mysql?.url ?? null })
  return async () => {
    await Promise.all(chosen.map(([, db]) => db?.stop?.()))
  }
}

/**
 * Sets `PGBOUNCER_URL` to a PgBouncer in transaction mode in front of `postgresUrl` (kept when
 * already set), started by scripts/ensure-pgbouncer.sh when that server is on this machine. When
 * none can be had (a remote server, no pgbouncer and no root or apt-get to install it), leaves it
 * unset, sets `PGBOUNCER_SKIPPED` to the reason and prints one line: the pooled tests skip.
 */
function choosePgBouncer(postgresUrl: string): void {
  if (process.env.PGBOUNCER_URL) return
  const host = new URL(postgresUrl).hostname
  let reason: string | undefined
  if (!['127.0.0.1', 'localhost', '[::1]', '::1'].includes(host)) {
    reason = `PostgreSQL is not on this machine (${host}), so no PgBouncer is started in front of it`
  } else {
    const script = fileURLToPath(new URL('../../../scripts/ensure-pgbouncer.sh', import.meta.url))
    const run = spawnSync('bash', [script], {
      env: { ...process.env, DATABASE_URL: postgresUrl },
      encoding: 'utf8',
      timeout: 300_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const url = run.status === 0 ? run.stdout.trim().split('\n').pop() : undefined
    if (url) process.env.PGBOUNCER_URL = url
    else {
      const said = run.stderr.trim().split('\n').pop()?.replace('[outboxkit] [pgbouncer] ', '')
      reason = said || run.error?.message || `scripts/ensure-pgbouncer.sh exited with ${run.status}`
    }
    // What it did (installed, started): printed only when it did something.
    if (url && run.stderr.trim()) console.log(run.stderr.trim())
  }
  if (reason !== undefined) {
    process.env.PGBOUNCER_SKIPPED = reason
    console.log(`[outboxkit] [test-databases] the PgBouncer (pooler) tests are skipped: ${reason}`)
  }
}

/**
 * Starts the forwarder tests' brokers that are not running (NATS with JetStream, RabbitMQ, Redis)
 * with scripts/ensure-brokers.sh, and prints what it did. A broker it cannot start makes its own
 * tests fail with that broker's connection error.
 */
function ensureBrokers(): void {
  const script = fileURLToPath(new URL('../../../scripts/ensure-brokers.sh', import.meta.url))
  const run = spawnSync('bash', [script], {
    encoding: 'utf8',
    timeout: 180_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  if (run.stderr.trim()) console.log(run.stderr.trim())
}

/**
 * Makes the tests' PostgreSQL ready for the WAL transport (wal_level = logical, replication lines
 * in pg_hba.conf) with scripts/ensure-wal.sh: a no-op when it already is, a restart only when
 * wal_level must change. When it cannot, sets `OUTBOXKIT_WAL_SKIPPED` to why and says so in one line.
 */
function ensureWal(postgresUrl: string): void {
  const script = fileURLToPath(new URL('../../../scripts/ensure-wal.sh', import.meta.url))
  const run = spawnSync('bash', [script], {
    env: { ...process.env, DATABASE_URL: postgresUrl },
    encoding: 'utf8',
    timeout: 120_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  if (run.status === 0) {
    if (run.stderr.trim()) console.log(run.stderr.trim())
    return
  }
  const said = run.stderr.trim().split('\n').pop() || run.error?.message || `exit ${run.status}`
  process.env.OUTBOXKIT_WAL_SKIPPED = said
  console.log(
    `[outboxkit] [test-databases] the WAL transport is not available on the tests' PostgreSQL: ${said}`,
  )
}
