import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { waitFor } from '@outboxkit/conformance'
import mysql from 'mysql2/promise'
import { freePort } from './pg-cluster.js'

const run = promisify(execFile)
const MARIADBD = process.env.MARIADBD ?? '/usr/sbin/mariadbd'
const INSTALL_DB =
  process.env.MARIADB_INSTALL_DB ??
  ['/usr/bin/mariadb-install-db', '/usr/local/bin/mariadb-install-db', '/usr/bin/mysql_install_db'].find(
    (p) => existsSync(p),
  )

/** A throw-away MariaDB server of its own (data dir in a temp dir, its own port) that a test may restart. */
export interface DedicatedMariadb {
  readonly port: number
  /** `mysql://root@127.0.0.1:<port>/test` (the server runs with `--skip-grant-tables`). */
  readonly url: string
  /** Stops the server as `pg_ctl -m fast` does (SIGTERM: every client disconnected, clean shutdown), then starts it again. */
  restart(): Promise<void>
  /** Stops the server and deletes its data directory. */
  destroy(): Promise<void>
}

/**
 * Why a dedicated MariaDB cannot be started here, or `undefined` when it can: `mariadbd` (set
 * `MARIADBD`) and `mariadb-install-db` (set `MARIADB_INSTALL_DB`) must exist, and as root the
 * server runs as the `mysql` OS user.
 */
export async function dedicatedMariadbUnavailable(): Promise<string | undefined> {
  if (!existsSync(MARIADBD)) return `${MARIADBD} not found (set MARIADBD)`
  if (!INSTALL_DB) return 'mariadb-install-db not found (set MARIADB_INSTALL_DB)'
  if (process.getuid?.() === 0) {
    try {
      await run('id', ['-u', 'mysql'])
    } catch (err) {
      return `no mysql OS user to run mariadbd as: ${(err as Error).message}`
    }
  }
  return undefined
}

/**
 * `mariadb-install-db` into a temporary directory, then `mariadbd` on a free port of 127.0.0.1
 * with `--skip-grant-tables` (root, no password), small InnoDB buffers and
 * `innodb_flush_log_at_trx_commit=2` (a server restart keeps every commit; only an OS crash
 * would need the flush), and a database `test`.
 */
export async function startDedicatedMariadb(): Promise<DedicatedMariadb> {
  const asRoot = process.getuid?.() === 0
  const dir = mkdtempSync(join(tmpdir(), 'outboxkit-mariadb-'))
  if (asRoot) {
    const { stdout: uid } = await run('id', ['-u', 'mysql'])
    const { stdout: gid } = await run('id', ['-g', 'mysql'])
    chownSync(dir, Number(uid.trim()), Number(gid.trim()))
  }
  const data = join(dir, 'data')
  const user = asRoot ? ['--user=mysql'] : []
  await run(INSTALL_DB!, [
    '--no-defaults',
    `--datadir=${data}`,
    ...user,
    '--skip-test-db',
    '--auth-root-authentication-method=normal',
  ])
  const port = await freePort()
  const errorLog = join(dir, 'error.log')
  const args = [
    '--no-defaults',
    `--datadir=${data}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    `--socket=${join(dir, 'sock')}`,
    `--pid-file=${join(dir, 'pid')}`,
    ...user,
    '--skip-grant-tables',
    '--skip-name-resolve',
    '--skip-log-bin',
    '--innodb-buffer-pool-size=32M',
    '--innodb-log-file-size=16M',
    '--innodb-flush-log-at-trx-commit=2',
    '--max-connections=200',
    `--log-error=${errorLog}`,
  ]
  let child: ChildProcess | undefined
  let exited: Promise<unknown> = Promise.resolve()
  const killOnExit = () => child?.kill('SIGKILL')
  process.once('exit', killOnExit)
  const logTail = () =>
    existsSync(errorLog) ? readFileSync(errorLog, 'utf8').slice(-1_500) : '(no error log)'

  const start = async () => {
    const c = spawn(MARIADBD, args, { stdio: 'ignore' })
    child = c
    let gone = false
    exited = new Promise((resolve) => {
      c.once('exit', (code, signal) => {
        gone = true
        resolve({ code, signal })
      })
    })
    await waitFor(
      async () => {
        if (gone) throw new Error(`mariadbd exited while starting: ${logTail()}`)
        const conn = await mysql
          .createConnection({ host: '127.0.0.1', port, user: 'root' })
          .catch(() => undefined)
        if (!conn) return false
        await conn.end()
        return true
      },
      { timeoutMs: 60_000, intervalMs: 50, what: `mariadbd to accept connections on port ${port}` },
    )
  }
  const stop = async () => {
    const c = child
    if (!c || c.exitCode !== null || c.signalCode !== null) return
    c.kill('SIGTERM')
    const timer = setTimeout(() => c.kill('SIGKILL'), 60_000)
    await exited
    clearTimeout(timer)
  }

  await start()
  const admin = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root' })
  await admin.query('CREATE DATABASE IF NOT EXISTS test')
  await admin.end()
  return {
    port,
    url: `mysql://root@127.0.0.1:${port}/test`,
    async restart() {
      await stop()
      await start()
    },
    async destroy() {
      await stop().catch(() => {})
      process.removeListener('exit', killOnExit)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
