// The choice of the tests' database servers (test-databases.ts), with real TCP probes: a listener
// opened here on a free port "answers", a port closed again "does not". The container starter
// records its calls and hands back a URL: the Docker path itself cannot run on this machine.
import { createServer, type Server } from 'node:net'

import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'

import {
  LOCAL_MYSQL_URL,
  LOCAL_POSTGRES_URL,
  neededDatabases,
  type StartedTestDatabase,
  selectTestDatabases,
  type TestDatabaseKind,
  type TestDatabaseProbes,
  tcpAnswers,
} from '../src/test-databases.js'

let open: Server
let openPort: number
let closedPort: number

async function listen(): Promise<Server> {
  const server = createServer((socket) => socket.destroy())
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}
const portOf = (server: Server) => (server.address() as { port: number }).port

beforeAll(async () => {
  open = await listen()
  openPort = portOf(open)
  const closed = await listen()
  closedPort = portOf(closed)
  await new Promise((resolve) => closed.close(resolve))
})
afterAll(() => new Promise((resolve) => open.close(resolve)))

const pgAt = (port: number) => `postgres://postgres@127.0.0.1:${port}/test`
const myAt = (port: number) => `mysql://root@127.0.0.1:${port}/test`

/** Real TCP probes plus a recording Docker probe and container starter. */
function world(opts: {
  env?: Record<string, string | undefined>
  postgresPort?: number
  mysqlPort?: number
  docker?: boolean
  failStart?: TestDatabaseKind
}) {
  const calls = {
    answers: [] as string[],
    docker: 0,
    started: [] as TestDatabaseKind[],
    stopped: [] as string[],
  }
  const probes: TestDatabaseProbes = {
    env: opts.env ?? {},
    local: { postgres: pgAt(opts.postgresPort ?? closedPort), mysql: myAt(opts.mysqlPort ?? closedPort) },
    answers: (host, port) => {
      calls.answers.push(`${host}:${port}`)
      return tcpAnswers(host, port)
    },
    dockerReachable: async () => {
      calls.docker++
      return opts.docker ?? false
    },
    startContainer: async (kind): Promise<StartedTestDatabase> => {
      calls.started.push(kind)
      if (kind === opts.failStart) throw new Error('image pull refused')
      const url = `${kind}://container-${kind}/test`
      return { url, stop: async () => void calls.stopped.push(url) }
    },
  }
  return { probes, calls }
}

describe('selectTestDatabases', () => {
  test('URL variables win, and nothing is probed', async () => {
    const { probes, calls } = world({
      env: { DATABASE_URL: 'postgres://app@db/x', MYSQL_URL: 'mysql://app@db/y' },
      postgresPort: openPort,
      mysqlPort: openPort,
      docker: true,
    })
    expect(await selectTestDatabases(probes)).toEqual({
      ok: true,
      postgres: { url: 'postgres://app@db/x', source: 'env' },
      mysql: { url: 'mysql://app@db/y', source: 'env' },
    })
    expect(calls).toEqual({ answers: [], docker: 0, started: [], stopped: [] })
  })

  test('without them, the local servers when their ports answer; Docker is not asked', async () => {
    const { probes, calls } = world({
      env: { DATABASE_URL: '' },
      postgresPort: openPort,
      mysqlPort: openPort,
    })
    expect(await selectTestDatabases(probes)).toEqual({
      ok: true,
      postgres: { url: pgAt(openPort), source: 'local' },
      mysql: { url: myAt(openPort), source: 'local' },
    })
    expect(calls.answers.sort()).toEqual([`127.0.0.1:${openPort}`, `127.0.0.1:${openPort}`])
    expect(calls.docker).toBe(0)
  })

  test('a server that does not answer runs in a container when Docker is reachable, only that one', async () => {
    const { probes, calls } = world({ postgresPort: openPort, mysqlPort: closedPort, docker: true })
    const selection = await selectTestDatabases(probes)
    expect(selection).toMatchObject({
      ok: true,
      postgres: { url: pgAt(openPort), source: 'local' },
      mysql: { url: 'mysql://container-mysql/test', source: 'container' },
    })
    expect(calls.started).toEqual(['mysql'])
    if (!selection.ok) throw new Error('unreachable')
    expect(selection.postgres.stop).toBeUndefined()
    await selection.mysql!.stop!()
    expect(calls.stopped).toEqual(['mysql://container-mysql/test'])
  })

  test('both missing and Docker reachable: two containers', async () => {
    const { probes, calls } = world({ docker: true })
    expect(await selectTestDatabases(probes)).toMatchObject({
      ok: true,
      postgres: { url: 'postgres://container-postgres/test', source: 'container' },
      mysql: { url: 'mysql://container-mysql/test', source: 'container' },
    })
    expect(calls.started.sort()).toEqual(['mysql', 'postgres'])
  })

  test('nothing anywhere: one message naming both servers and the three ways', async () => {
    const { probes, calls } = world({})
    expect(await selectTestDatabases(probes)).toEqual({
      ok: false,
      message: [
        '[outboxkit] [test-databases] no PostgreSQL and no MariaDB/MySQL for the tests: DATABASE_URL and ' +
          `MYSQL_URL are not set, nothing answers at 127.0.0.1:${closedPort} and 127.0.0.1:${closedPort}, ` +
          'and no Docker engine is reachable. Any one of these three ways fixes it:',
        '  1. set DATABASE_URL=postgres://USER:PASSWORD@HOST:PORT/DATABASE and MYSQL_URL=mysql://USER:PASSWORD@HOST:PORT/DATABASE',
        `  2. start a local PostgreSQL at ${pgAt(closedPort)} and MariaDB/MySQL at ${myAt(closedPort)}`,
        '  3. start Docker: the tests then run PostgreSQL (postgres:15-alpine) and MariaDB/MySQL (mariadb:10.11) in containers (testcontainers)',
        "OUTBOXKIT_DIALECTS=postgres,sqlite leaves MariaDB/MySQL out of the relay and conformance matrix; the MySQL packages' own test files still need it.",
      ].join('\n'),
    })
    expect(calls.docker).toBe(1)
    expect(calls.started).toEqual([])
  })

  test('only PostgreSQL missing: the message names PostgreSQL alone', async () => {
    const { probes } = world({ env: { MYSQL_URL: 'mysql://app@db/y' } })
    const selection = await selectTestDatabases(probes)
    expect(selection.ok).toBe(false)
    const message = (selection as { message: string }).message
    expect(message).toMatch(
      /^\[outboxkit\] \[test-databases\] no PostgreSQL for the tests: DATABASE_URL is not set/,
    )
    expect(message).toContain('1. set DATABASE_URL=')
    expect(message).toContain(`2. start a local PostgreSQL at ${pgAt(closedPort)}\n`)
    expect(message.split('\n').at(-1)).toBe(
      '  3. start Docker: the tests then run PostgreSQL (postgres:15-alpine) in a container (testcontainers)',
    )
    expect(message).not.toMatch(/MariaDB|MYSQL_URL|OUTBOXKIT_DIALECTS/)
  })

  test('a matrix without mysql needs no MariaDB/MySQL: not probed, not started, not asked for', async () => {
    for (const dialects of ['postgres,sqlite', 'sqlite']) {
      const { probes, calls } = world({
        env: { OUTBOXKIT_DIALECTS: dialects },
        postgresPort: openPort,
        docker: true,
      })
      expect(await selectTestDatabases(probes)).toEqual({
        ok: true,
        postgres: { url: pgAt(openPort), source: 'local' },
        mysql: null,
      })
      expect(calls).toEqual({ answers: [`127.0.0.1:${openPort}`], docker: 0, started: [], stopped: [] })
    }
    // PostgreSQL stays required whatever the matrix (some PostgreSQL-only tests always run).
    const { probes } = world({ env: { OUTBOXKIT_DIALECTS: 'sqlite' } })
    const selection = await selectTestDatabases(probes)
    expect((selection as { message: string }).message).toMatch(
      /^\[outboxkit\] \[test-databases\] no PostgreSQL for/,
    )
  })

  test('a container that fails to start: the started one is stopped, and the message says why', async () => {
    const { probes, calls } = world({ docker: true, failStart: 'mysql' })
    const selection = await selectTestDatabases(probes)
    expect(selection.ok).toBe(false)
    expect((selection as { message: string }).message).toContain(
      'and a Docker engine is reachable but a container did not start (MariaDB/MySQL: image pull refused). Any one',
    )
    expect(calls.stopped).toEqual(['postgres://container-postgres/test'])
  })

  test('an unknown dialect in OUTBOXKIT_DIALECTS is the message, before any probe', async () => {
    const { probes, calls } = world({ env: { OUTBOXKIT_DIALECTS: 'postgres,mysq' } })
    expect(await selectTestDatabases(probes)).toEqual({
      ok: false,
      message: '[outboxkit] [conformance] unknown dialect "mysq": use one of postgres, mysql, sqlite',
    })
    expect(calls.answers).toEqual([])
  })

  test('the default local servers are the ones the tests used before', () => {
    expect(LOCAL_POSTGRES_URL).toBe('postgres://postgres@127.0.0.1:5432/test')
    expect(LOCAL_MYSQL_URL).toBe('mysql://root@127.0.0.1:3306/test')
    expect(neededDatabases(undefined)).toEqual(['postgres', 'mysql'])
    expect(neededDatabases('mysql')).toEqual(['postgres', 'mysql'])
  })
})

describe('tcpAnswers', () => {
  test('true for a listener, false for a closed port, neither waiting for the timeout', async () => {
    const started = performance.now()
    expect(await tcpAnswers('127.0.0.1', openPort, 10_000)).toBe(true)
    expect(await tcpAnswers('127.0.0.1', closedPort, 10_000)).toBe(false)
    // A refusal comes at once: half the timeout is a bound a loaded machine still meets.
    expect(performance.now() - started).toBeLessThan(5_000)
  })
})

test('the globalSetup handed its choice to this worker through DATABASE_URL and MYSQL_URL', () => {
  const chosen = inject('testDatabases')
  expect(chosen.postgres).not.toBe('')
  expect(process.env.DATABASE_URL).toBe(chosen.postgres)
  if (chosen.mysql !== null) expect(process.env.MYSQL_URL).toBe(chosen.mysql)
})
