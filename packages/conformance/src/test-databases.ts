import { createConnection } from 'node:net'

import { parseDialects } from './matrix.js'

/**
 * Which database servers the tests run on, chosen once before any test starts (see
 * `test-databases-setup.ts`, the vitest `globalSetup`). For each server the run needs, in order:
 * its URL variable when set (`DATABASE_URL`, `MYSQL_URL`); else the local server when its port
 * answers; else a container started with testcontainers when a Docker engine is reachable; else
 * one message naming the three ways and the missing servers.
 *
 * {@link selectTestDatabases} is the choice itself, with its probes passed in; the real probes
 * ({@link tcpAnswers}, {@link dockerEngineReachable}, {@link startTestContainer}) live here too, and
 * load testcontainers only when a container is actually needed.
 */

/** A database server the tests need: PostgreSQL (always) or MariaDB/MySQL (the `mysql` dialect). */
export type TestDatabaseKind = 'postgres' | 'mysql'

/** Where a chosen URL comes from: its environment variable, the local server, or a container. */
export type TestDatabaseSource = 'env' | 'local' | 'container'

/** The local PostgreSQL the tests use when `DATABASE_URL` is not set (database `test`, trust auth). */
export const LOCAL_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test'

/** The local MariaDB/MySQL the tests use when `MYSQL_URL` is not set (root without password). */
export const LOCAL_MYSQL_URL = 'mysql://root@127.0.0.1:3306/test'

/** The images of the Docker path: the versions the project tests (PostgreSQL 15, MariaDB 10.11). */
export const TEST_CONTAINER_IMAGES: Readonly<Record<TestDatabaseKind, string>> = {
  postgres: 'postgres:15-alpine',
  mysql: 'mariadb:10.11',
}

/** The environment variable that names each server's URL. */
export const TEST_DATABASE_ENV: Readonly<Record<TestDatabaseKind, 'DATABASE_URL' | 'MYSQL_URL'>> = {
  postgres: 'DATABASE_URL',
  mysql: 'MYSQL_URL',
}

const LABEL: Readonly<Record<TestDatabaseKind, string>> = { postgres: 'PostgreSQL', mysql: 'MariaDB/MySQL' }

/** A database container that is running: its URL, and how to stop it. */
export interface StartedTestDatabase {
  readonly url: string
  stop(): Promise<void>
}

/** What {@link selectTestDatabases} looks at: the environment and three probes. */
export interface TestDatabaseProbes {
  /** The environment (`DATABASE_URL`, `MYSQL_URL`, `OUTBOXKIT_DIALECTS`). */
  readonly env: Readonly<Record<string, string | undefined>>
  /** Whether something accepts a TCP connection at `host:port` (see {@link tcpAnswers}). */
  answers(host: string, port: number): Promise<boolean>
  /** Whether a Docker engine is reachable (see {@link dockerEngineReachable}). */
  dockerReachable(): Promise<boolean>
  /** Starts a container for `kind` (see {@link startTestContainer}). */
  startContainer(kind: TestDatabaseKind): Promise<StartedTestDatabase>
  /** The local servers to probe; {@link LOCAL_POSTGRES_URL} and {@link LOCAL_MYSQL_URL} unless given. */
  readonly local?: Readonly<Partial<Record<TestDatabaseKind, string>>>
}

/** One chosen server: its URL, where it comes from, and for a container how to stop it. */
export interface ChosenTestDatabase {
  readonly url: string
  readonly source: TestDatabaseSource
  /** Stops the container (only for `source: 'container'`). */
  readonly stop?: () => Promise<void>
}

/**
 * The outcome of {@link selectTestDatabases}: the servers (MariaDB/MySQL is `null` when the run's
 * dialects leave `mysql` out), or the one message to show before any test runs.
 */
export type TestDatabaseSelection =
  | { readonly ok: true; readonly postgres: ChosenTestDatabase; readonly mysql: ChosenTestDatabase | null }
  | { readonly ok: false; readonly message: string }

/**
 * Chooses the tests' database servers. PostgreSQL is always needed (some PostgreSQL-only tests run
 * whatever the matrix); MariaDB/MySQL only when `OUTBOXKIT_DIALECTS` includes `mysql` (or is unset).
 * Per server: a non-empty URL variable wins, unprobed; else the local server when its port
 * answers; the servers still missing then run in containers when Docker is reachable (the engine
 * is only asked then, so a normal run pays two local TCP connects). Never throws for a missing
 * server: it returns the message instead. When one container fails to start, the others are
 * stopped and the message says why.
 */
export async function selectTestDatabases(probes: TestDatabaseProbes): Promise<TestDatabaseSelection> {
  let kinds: TestDatabaseKind[]
  try {
    kinds = neededDatabases(probes.env.OUTBOXKIT_DIALECTS)
  } catch (error) {
    return { ok: false, message: (error as Error).message }
  }
  const localUrl = (kind: TestDatabaseKind) =>
    probes.local?.[kind] ?? (kind === 'postgres' ? LOCAL_POSTGRES_URL : LOCAL_MYSQL_URL)

  const chosen = new Map<TestDatabaseKind, ChosenTestDatabase>()
  await Promise.all(
    kinds.map(async (kind) => {
      const fromEnv = probes.env[TEST_DATABASE_ENV[kind]]
      if (fromEnv !== undefined && fromEnv !== '') chosen.set(kind, { url: fromEnv, source: 'env' })
      else if (await probes.answers(...hostPort(localUrl(kind)))) {
        chosen.set(kind, { url: localUrl(kind), source: 'local' })
      }
    }),
  )
  const missing = kinds.filter((kind) => !chosen.has(kind))
  if (missing.length > 0) {
    if (!(await probes.dockerReachable())) {
      return { ok: false, message: missingMessage(missing, localUrl, 'no Docker engine is reachable') }
    }
    const started = await Promise.allSettled(missing.map((kind) => probes.startContainer(kind)))
    const failed = started.flatMap((s, i) =>
      s.status === 'rejected' ? [[missing[i]!, s.reason] as const] : [],
    )
    if (failed.length > 0) {
      await Promise.allSettled(started.map((s) => (s.status === 'fulfilled' ? s.value.stop() : undefined)))
      const why = failed.map(([kind, reason]) => `${LABEL[kind]}: ${errorText(reason)}`).join('; ')
      const docker = `a Docker engine is reachable but a container did not start (${why})`
      return { ok: false, message: missingMessage(missing, localUrl, docker) }
    }
    started.forEach((s, i) => {
      const db = (s as PromiseFulfilledResult<StartedTestDatabase>).value
      chosen.set(missing[i]!, { url: db.url, source: 'container', stop: () => db.stop() })
    })
  }
  return { ok: true, postgres: chosen.get('postgres')!, mysql: chosen.get('mysql') ?? null }
}

/** The servers a run needs: PostgreSQL, plus MariaDB/MySQL when its dialects include `mysql`. */
export function neededDatabases(dialects: string | undefined): TestDatabaseKind[] {
  return parseDialects(dialects).includes('mysql') ? ['postgres', 'mysql'] : ['postgres']
}

/**
 * The message for servers that none of the three ways gave: names them, the variables, the ports
 * probed, what Docker said (`docker`), and the three ways.
 */
function missingMessage(
  missing: readonly TestDatabaseKind[],
  localUrl: (kind: TestDatabaseKind) => string,
  docker: string,
): string {
  const and = (items: readonly string[]) => items.join(' and ')
  const lines = [
    `[outboxkit] [test-databases] no ${missing.map((k) => LABEL[k]).join(' and no ')} for the tests: ` +
      `${and(missing.map((k) => TEST_DATABASE_ENV[k]))} ${missing.length > 1 ? 'are' : 'is'} not set, ` +
      `nothing answers at ${and(missing.map((k) => hostPort(localUrl(k)).join(':')))}, ` +
      `and ${docker}. Any one of these three ways fixes it:`,
    `  1. set ${and(missing.map((k) => `${TEST_DATABASE_ENV[k]}=${k === 'postgres' ? 'postgres' : 'mysql'}://USER:PASSWORD@HOST:PORT/DATABASE`))}`,
    `  2. start a local ${and(missing.map((k) => `${LABEL[k]} at ${localUrl(k)}`))}`,
    `  3. start Docker: the tests then run ${and(missing.map((k) => `${LABEL[k]} (${TEST_CONTAINER_IMAGES[k]})`))} in ${missing.length > 1 ? 'containers' : 'a container'} (testcontainers)`,
  ]
  if (missing.includes('mysql')) {
    lines.push(
      'OUTBOXKIT_DIALECTS=postgres,sqlite leaves MariaDB/MySQL out of the relay and conformance matrix; ' +
        "the MySQL packages' own test files still need it.",
    )
  }
  return lines.join('\n')
}

function hostPort(url: string): [string, number] {
  const u = new URL(url)
  const port = u.port !== '' ? Number(u.port) : u.protocol.startsWith('postgres') ? 5432 : 3306
  return [u.hostname.replace(/^\[|\]$/g, ''), port]
}

function errorText(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason)
}

/**
 * Whether something accepts a TCP connection at `host:port` within `timeoutMs` (default 500 ms):
 * a refused or silent port is `false`. On the local machine a refusal comes at once, so this costs
 * a few milliseconds; the timeout only bounds an address that drops packets.
 */
export function tcpAnswers(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port })
    const done = (answered: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(answered)
    }
    const timer = setTimeout(() => done(false), timeoutMs)
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

/**
 * Whether testcontainers finds a working container runtime (a Docker engine through `DOCKER_HOST`,
 * the Docker socket, a Docker context, `~/.testcontainers.properties`...). Loads testcontainers on
 * first call, so only a run whose servers are missing pays for it.
 */
export async function dockerEngineReachable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers')
    await getContainerRuntimeClient()
    return true
  } catch {
    return false
  }
}

/**
 * Starts the container for `kind` from {@link TEST_CONTAINER_IMAGES}: PostgreSQL as user
 * `postgres` with trust auth, MariaDB as `root`, both with a database `test`, like the local
 * servers. Loads the testcontainers module on call.
 */
export async function startTestContainer(kind: TestDatabaseKind): Promise<StartedTestDatabase> {
  if (kind === 'postgres') {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql')
    const container = await new PostgreSqlContainer(TEST_CONTAINER_IMAGES.postgres)
      .withDatabase('test')
      .withUsername('postgres')
      .withPassword('outboxkit')
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
      .start()
    return { url: container.getConnectionUri(), stop: async () => void (await container.stop()) }
  }
  const { MariaDbContainer } = await import('@testcontainers/mariadb')
  const container = await new MariaDbContainer(TEST_CONTAINER_IMAGES.mysql)
    .withDatabase('test')
    .withRootPassword('outboxkit')
    .start()
  const url = new URL('mysql://root@localhost/test')
  url.hostname = container.getHost()
  url.port = String(container.getPort())
  url.password = container.getRootPassword()
  return { url: url.href, stop: async () => void (await container.stop()) }
}
