import { execFile } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const BIN = process.env.PG_BIN_DIR ?? '/usr/lib/postgresql/15/bin'

/** A throw-away PostgreSQL cluster of its own, on its own port, that a test may stop and restart. */
export interface DedicatedCluster {
  readonly port: number
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string
  /** `pg_ctl stop -m <mode>` (`immediate` is a crash: no checkpoint, recovery on next start). */
  stop(mode: 'fast' | 'immediate'): Promise<void>
  start(): Promise<void>
  /** `pg_ctl restart -m <mode>`: stops (disconnecting every client) and starts again, waiting for both. */
  restart(mode: 'fast' | 'immediate'): Promise<void>
  /** Stops (fast) and deletes the data directory. */
  destroy(): Promise<void>
}

/**
 * Why a dedicated cluster cannot be started here, or `undefined` when it can: the PostgreSQL
 * binaries must exist, and as root we run them as the `postgres` OS user with `runuser`.
 */
export async function dedicatedClusterUnavailable(): Promise<string | undefined> {
  for (const bin of ['initdb', 'pg_ctl', 'postgres']) {
    if (!existsSync(join(BIN, bin))) return `${join(BIN, bin)} not found (set PG_BIN_DIR)`
  }
  if (process.getuid?.() === 0) {
    try {
      await run('runuser', ['-u', 'postgres', '--', 'true'])
    } catch (err) {
      return `cannot run as the postgres OS user with runuser: ${(err as Error).message}`
    }
  }
  return undefined
}

/** A TCP port free on 127.0.0.1 right now (for a server the test starts). */
export async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Options of {@link startDedicatedCluster}. */
export interface DedicatedClusterOptions {
  /**
   * Server settings passed as `-c name=value` at every start, e.g. `{ wal_level: 'replica' }`.
   *
   * @defaultValue `{}`: initdb's defaults
   */
  settings?: Readonly<Record<string, string>>
}

/**
 * initdb into a temporary directory and starts the cluster on a free port (trust auth,
 * `fsync=off`: a PostgreSQL crash keeps committed data in the OS page cache, and only an OS crash
 * would need fsync), with `options.settings` on top.
 */
export async function startDedicatedCluster(
  options: DedicatedClusterOptions = {},
): Promise<DedicatedCluster> {
  const asRoot = process.getuid?.() === 0
  const dir = mkdtempSync(join(tmpdir(), 'outboxkit-pg-'))
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres'])
    const { stdout: gid } = await run('id', ['-g', 'postgres'])
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()))
  }
  chmodSync(dir, 0o700)
  const pg = (bin: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(BIN, bin), ...args]) : run(join(BIN, bin), args)
  const data = join(dir, 'data')
  await pg('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-N', '-E', 'UTF8'])
  const port = await freePort()
  const settings = Object.entries(options.settings ?? {})
    .map(([name, value]) => ` -c ${name}=${value}`)
    .join('')
  const serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100${settings}`
  const start = async () => {
    await pg('pg_ctl', ['-D', data, '-o', serverOptions, '-l', join(dir, 'log'), '-w', '-t', '60', 'start'])
  }
  const stop = async (mode: 'fast' | 'immediate') => {
    await pg('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop'])
  }
  const restart = async (mode: 'fast' | 'immediate') => {
    await pg('pg_ctl', [
      '-D',
      data,
      '-o',
      serverOptions,
      '-l',
      join(dir, 'log'),
      '-m',
      mode,
      '-w',
      '-t',
      '60',
      'restart',
    ])
  }
  await start()
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop,
    start,
    restart,
    async destroy() {
      await stop('fast').catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
