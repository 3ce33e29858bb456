import { rmSync, statfsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineOutbox, migrate } from '@outboxkit/core'
import { mysqlBackend, publishMany as publishManyMysql } from '@outboxkit/mysql'
import { publishMany as publishManySqlite, type SqliteDatabase, sqliteBackend } from '@outboxkit/sqlite'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { bundle } from '../bundle.js'
import { runChild } from '../child-runner.js'
import { type BenchRelayOptions, loadOutboxBacklog, resetOutbox } from '../contenders/outboxkit.js'
import { BENCH_DATABASE, withDatabase } from '../db.js'
import { median, round } from '../stats.js'
import { OUTBOX_TABLE, payloadFor, TOPIC } from '../workload.js'
import type { BackendKind, BackendsJobResult } from './backends-job.js'
import { RELAY_DEFAULTS, RELAY_TUNED } from './drain.js'

/**
 * better-sqlite3's `Database` constructor. Its type declarations are installed for @outboxkit/sqlite,
 * not for the bench, so it is loaded here with the connection type that package exports.
 */
const Database = createRequire(import.meta.url)('better-sqlite3') as new (
  filename: string,
  options?: { readonly?: boolean; timeout?: number },
) => SqliteDatabase

/** Options of scenario 8. */
export interface BackendsOptions {
  /** Messages of each drain's backlog. */
  backlog: number
  rounds: number
}

/** One drain (one database, one relay setting, one round). */
export interface BackendDrainRun extends BackendsJobResult {
  /** The relay child's peak RSS, in MiB. */
  peakRssMiB: number
}

/** One database's drains with one relay setting, over the rounds. */
export interface BackendRow {
  backend: BackendKind
  label: string
  /** The server (or library) version and the settings that bear on commit cost. */
  server: string
  /** The relay's connection(s) to the database. */
  connection: string
  rounds: BackendDrainRun[]
  medianPerSecond: number
  /** The median of {@link roundRatios}: this database / PostgreSQL (1 for PostgreSQL itself). */
  ratio?: number
  /** msg/s of this database / msg/s of PostgreSQL, with the same settings in the same round. */
  roundRatios: number[]
  skipped?: string
}

/** The three databases drained with one relay setting. */
export interface BackendsGroup {
  settings: 'defaults' | 'tuned'
  label: string
  relay: BenchRelayOptions
  rows: BackendRow[]
}

/** Scenario 8's result in latest.json. */
export interface BackendsResult {
  backlog: number
  rounds: number
  groups: BackendsGroup[]
}

/** A database the scenario drains: how to reset, load and inspect its outbox. */
interface BackendTarget {
  kind: BackendKind
  label: string
  server: string
  connection: string
  /** What the relay child connects to (see {@link BackendsJobSpec.target}). */
  target: string
  /** Why the database is skipped, when it is. */
  unavailable?: string
  /** Drops the outbox table and creates it again with `migrate`. */
  reset(): Promise<void>
  /** Loads `count` messages with the package's own `publishMany`, then analyzes the table. */
  load(count: number): Promise<void>
  /** Rows left in the outbox (a drain must leave none: delivered rows are deleted by default). */
  remaining(): Promise<number>
  /** Drops what the scenario created. */
  cleanup(): Promise<void>
}

const DRAIN_TIMEOUT_MS = 600_000
const outbox = () => defineOutbox({ table: OUTBOX_TABLE, notify: false })
const messages = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({ topic: TOPIC, payload: payloadFor(from + i) }))
const firstLine = (err: unknown) => (err as Error).message.split('\n')[0]!

/** The MySQL/MariaDB server: MYSQL_URL, else the local test server. */
export function mysqlServerUri(): string {
  return process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
}

/** `uri` without its password, for logs and reports. */
function redact(uri: string): string {
  const u = new URL(uri)
  if (u.password) u.password = '***'
  return u.toString()
}

function postgresTarget(url: string): BackendTarget {
  return {
    kind: 'postgresql',
    label: 'PostgreSQL (pgBackend)',
    server: '',
    connection: 'pg pool 10 (default)',
    target: url,
    reset: () => resetOutbox(url),
    load: (count) => loadOutboxBacklog(url, count),
    async remaining() {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      try {
        const { rows } = await client.query(`SELECT count(*)::int AS n FROM ${OUTBOX_TABLE}`)
        return rows[0].n
      } finally {
        await client.end()
      }
    },
    async cleanup() {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      try {
        await client.query(`DROP TABLE IF EXISTS ${OUTBOX_TABLE}`)
      } finally {
        await client.end()
      }
    },
  }
}

/** PostgreSQL's version and commit settings. */
async function postgresServer(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query(
      `SELECT split_part(version(), ' on ', 1) AS v, current_setting('synchronous_commit') AS sc, current_setting('fsync') AS f`,
    )
    return `${rows[0].v} (synchronous_commit ${rows[0].sc}, fsync ${rows[0].f})`
  } finally {
    await client.end()
  }
}

/**
 * The MySQL/MariaDB target on database {@link BENCH_DATABASE} of the server at {@link mysqlServerUri},
 * created if missing. Unavailable (with the reason) when the server does not answer within 3 s.
 */
async function mysqlTarget(): Promise<BackendTarget> {
  const server = mysqlServerUri()
  const uri = withDatabase(server, BENCH_DATABASE)
  const base: BackendTarget = {
    kind: 'mysql',
    label: 'MySQL/MariaDB (mysqlBackend)',
    server: '',
    connection: 'mysql2 pool 10 (default)',
    target: uri,
    reset: async () => {},
    load: async () => {},
    remaining: async () => 0,
    cleanup: async () => {},
  }
  try {
    const conn = await mysql.createConnection({ uri: withDatabase(server, ''), connectTimeout: 3_000 })
    try {
      await conn.query(`CREATE DATABASE IF NOT EXISTS \`${BENCH_DATABASE.replace(/`/g, '``')}\``)
      const [rows] = (await conn.query(
        'SELECT VERSION() AS v, @@innodb_flush_log_at_trx_commit AS f, @@log_bin AS b',
      )) as unknown as [{ v: string; f: number; b: number }[]]
      const r = rows[0]!
      base.server = `${/mariadb/i.test(r.v) ? 'MariaDB' : 'MySQL'} ${r.v} (innodb_flush_log_at_trx_commit ${r.f}, binary log ${Number(r.b) ? 'on' : 'off'})`
    } finally {
      await conn.end()
    }
  } catch (err) {
    base.unavailable = `MySQL/MariaDB at ${redact(server)} did not answer (${firstLine(err)}); start it or set MYSQL_URL`
    return base
  }
  const query = async (sql: string): Promise<unknown> => {
    const conn = await mysql.createConnection({ uri })
    try {
      return (await conn.query(sql))[0]
    } finally {
      await conn.end()
    }
  }
  return {
    ...base,
    async reset() {
      await query(`DROP TABLE IF EXISTS \`${OUTBOX_TABLE}\``)
      const backend = mysqlBackend({ uri, connectionLimit: 1 })
      try {
        await migrate(outbox(), backend)
      } finally {
        await backend.close()
      }
    },
    async load(count) {
      const pool = mysql.createPool({ uri, connectionLimit: 2 })
      const ob = outbox()
      const chunk = 1_000
      let next = 0
      const loader = async () => {
        const conn = await pool.getConnection()
        try {
          while (next < count) {
            const from = next
            const n = Math.min(chunk, count - from)
            next += n
            await conn.beginTransaction()
            await publishManyMysql(ob, conn, messages(from, n))
            await conn.commit()
          }
        } finally {
          conn.release()
        }
      }
      try {
        await Promise.all([loader(), loader()])
        await pool.query(`ANALYZE TABLE \`${OUTBOX_TABLE}\``)
      } finally {
        await pool.end()
      }
    },
    async remaining() {
      const rows = (await query(`SELECT COUNT(*) AS n FROM \`${OUTBOX_TABLE}\``)) as { n: number }[]
      return Number(rows[0]!.n)
    },
    cleanup: async () => void (await query(`DROP TABLE IF EXISTS \`${OUTBOX_TABLE}\``)),
  }
}

/**
 * The `synchronous` level of a connection opened the way sqliteBackend({ filename }) opens its own
 * on a file already in WAL (better-sqlite3 builds SQLite with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1, so
 * it is NORMAL: a commit does not wait for fsync, a checkpoint does).
 */
function walSynchronous(file: string): string {
  const remove = () => {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
  }
  remove()
  try {
    const first = new Database(file)
    first.pragma('journal_mode = WAL')
    first.close()
    const db = new Database(file)
    try {
      db.pragma('journal_mode = WAL')
      const level = Number(db.pragma('synchronous', { simple: true }))
      return ['OFF', 'NORMAL', 'FULL', 'EXTRA'][level] ?? String(level)
    } finally {
      db.close()
    }
  } finally {
    remove()
  }
}

/** The SQLite target: a fresh WAL file under the OS temp directory per drain. */
function sqliteTarget(): BackendTarget {
  const file = join(tmpdir(), `outboxkit-bench-${process.pid}.db`)
  const remove = () => {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
  }
  const probe = new Database(':memory:')
  const version = probe.prepare('SELECT sqlite_version()').pluck().get() as string
  probe.close()
  // The commit cost depends on whether fsync reaches a disk: say so when the temp directory is tmpfs.
  const tmpfs = statfsSync(tmpdir()).type === 0x01021994
  const synchronous = walSynchronous(`${file}-probe`)
  return {
    kind: 'sqlite',
    label: 'SQLite (sqliteBackend)',
    server: `SQLite ${version} via better-sqlite3 (WAL, relay connection synchronous ${synchronous}, file in ${tmpdir()}${tmpfs ? ' on tmpfs: fsync is free' : ''})`,
    connection: 'its own connection (sqliteBackend({ filename }))',
    target: file,
    async reset() {
      remove()
      const backend = sqliteBackend({ filename: file })
      try {
        await migrate(outbox(), backend)
      } finally {
        await backend.close()
      }
    },
    async load(count) {
      const db = new Database(file, { timeout: 5_000 })
      try {
        db.pragma('journal_mode = WAL')
        const ob = outbox()
        const chunk = 1_000
        for (let from = 0; from < count; from += chunk) {
          const batch = messages(from, Math.min(chunk, count - from))
          db.transaction(() => {
            void publishManySqlite(ob, db, batch)
          })()
        }
        db.exec('ANALYZE')
      } finally {
        db.close()
      }
    },
    async remaining() {
      const db = new Database(file, { readonly: true })
      try {
        return Number(db.prepare(`SELECT count(*) FROM ${OUTBOX_TABLE}`).pluck().get())
      } finally {
        db.close()
      }
    },
    cleanup: async () => remove(),
  }
}

/**
 * Drains one backlog on `t`: resets the table, starts the relay child (which warms its connection)
 * while the parent loads the backlog, then sends `go`; the child times the drain. Checks that the
 * drain left no row behind.
 */
async function drainOnce(
  t: BackendTarget,
  count: number,
  relay: BenchRelayOptions,
  script: string,
): Promise<BackendDrainRun> {
  await t.reset()
  let onReady!: () => void
  const ready = new Promise<void>((resolve) => {
    onReady = resolve
  })
  let send: ((m: unknown) => void) | undefined
  const child = runChild<BackendsJobResult>(
    {
      kind: 'backends',
      spec: { backend: t.kind, target: t.target, count, relay, timeoutMs: DRAIN_TIMEOUT_MS },
    },
    {
      script,
      onProgress: (p: any) => {
        if (p?.ready) onReady()
      },
      control: (s) => {
        send = s
      },
    },
  )
  // A child that exits before it is ready (an error) ends the wait instead of hanging it.
  const early = child.then(() => {
    throw new Error(`bench: the ${t.kind} relay exited before the drain started`)
  })
  early.catch(() => {})
  let started = false
  try {
    await Promise.race([Promise.all([ready, t.load(count)]), early])
    send?.({ type: 'go' })
    started = true
  } finally {
    if (!started) {
      send?.({ type: 'stop' })
      await child.catch(() => {})
    }
  }
  const out = await child
  if (out.result.errors > 0)
    throw new Error(`bench: the ${t.kind} relay reported ${out.result.errors} error(s)`)
  const left = await t.remaining()
  if (left > 0) throw new Error(`bench: ${left} row(s) left in the ${t.kind} outbox after the drain`)
  return {
    ...out.result,
    seconds: round(out.result.seconds, 3),
    perSecond: round(out.result.perSecond, 0),
    cpuUserMs: round(out.result.cpuUserMs, 0),
    cpuSystemMs: round(out.result.cpuSystemMs, 0),
    peakRssMiB: out.maxRssMiB,
  }
}

/**
 * Scenario 8 (issue 7): the drain of a backlog with a no-op handler on PostgreSQL (the reference),
 * MySQL/MariaDB and SQLite, side by side in the same run, with core's relay defaults and with the
 * tuned settings of scenario 1. In each round every setting drains on each database in turn; the
 * order of the databases rotates by round, so none always runs first or last. The ratios to
 * PostgreSQL are taken within a round. MySQL is skipped, with the reason, when it does not answer.
 */
export async function runBackendsScenario(
  url: string,
  opts: BackendsOptions,
  log: (line: string) => void,
): Promise<BackendsResult> {
  const started = performance.now()
  // The relays run as bundled plain JavaScript (as in production): a process starts in a fraction
  // of the time tsx takes, which keeps the scenario short. better-sqlite3 (a native addon) stays
  // an import, resolved from bench/node_modules.
  const script = await bundle(
    fileURLToPath(new URL('./backends-child.ts', import.meta.url)),
    fileURLToPath(new URL(`../../results/tmp/backends-child-${process.pid}.mjs`, import.meta.url)),
    ['better-sqlite3'],
  )
  const targets = [postgresTarget(url), await mysqlTarget(), sqliteTarget()]
  targets[0]!.server = await postgresServer(url)
  for (const t of targets) {
    if (t.unavailable) log(`  skip ${t.label}: ${t.unavailable}`)
    else log(`  ${t.label}: ${t.server}`)
  }
  const settings: { settings: BackendsGroup['settings']; label: string; relay: BenchRelayOptions }[] = [
    { settings: 'defaults', label: "core's relay defaults", relay: RELAY_DEFAULTS },
    {
      settings: 'tuned',
      label: `tuned: concurrency ${RELAY_TUNED.concurrency}, batchSize ${RELAY_TUNED.batchSize}`,
      relay: RELAY_TUNED,
    },
  ]
  const groups: BackendsGroup[] = settings.map((s) => ({
    ...s,
    rows: targets.map((t) => ({
      backend: t.kind,
      label: t.label,
      server: t.server,
      connection: t.connection,
      rounds: [],
      medianPerSecond: 0,
      roundRatios: [],
      ...(t.unavailable ? { skipped: t.unavailable } : {}),
    })),
  }))
  try {
    for (let r = 0; r < opts.rounds; r++) {
      const order = targets.map((_, i) => targets[(i + r) % targets.length]!)
      for (const group of groups) {
        const perSecond = new Map<BackendKind, number>()
        for (const t of order) {
          const row = group.rows.find((x) => x.backend === t.kind)!
          if (row.skipped) continue
          try {
            const run = await drainOnce(t, opts.backlog, group.relay, script)
            row.rounds.push(run)
            perSecond.set(t.kind, run.perSecond)
            log(
              `  round ${r + 1}, ${group.settings}, ${t.label}: ${run.perSecond} msg/s (${run.seconds} s, ${run.claims} claims)`,
            )
          } catch (err) {
            row.skipped = (err as Error).message.split('\n').slice(0, 3).join(' ')
            log(`  ${group.settings}, ${t.label} failed: ${row.skipped}`)
          }
        }
        const reference = perSecond.get('postgresql')
        for (const row of group.rows) {
          const v = perSecond.get(row.backend)
          if (reference && v) row.roundRatios.push(round(v / reference, 2))
        }
      }
    }
  } finally {
    for (const t of targets) if (!t.unavailable) await t.cleanup().catch(() => {})
    rmSync(script, { force: true })
  }
  for (const group of groups) {
    for (const row of group.rows) {
      row.medianPerSecond = round(median(row.rounds.map((x) => x.perSecond)), 0)
      if (row.roundRatios.length > 0) row.ratio = round(median(row.roundRatios), 2)
    }
  }
  log(`  scenario 8 took ${round((performance.now() - started) / 1000, 1)} s`)
  return { backlog: opts.backlog, rounds: opts.rounds, groups }
}
