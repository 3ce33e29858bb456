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
  project.provide('testDatabases', { postgres: selection.postgres.url, mysql: selection.mysql?.url ?? null })
  return async () => {
    await Promise.all(chosen.map(([, db]) => db?.stop?.()))
  }
}
