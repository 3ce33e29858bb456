import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testDatabaseUrl, testMysqlUri, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, type Outbox, outboxDdl, type PublishMessage } from '@outboxkit/core'
import { mysqlOutboxDdl, SQLITE_NOW_MS, sqliteOutboxDdl } from '@outboxkit/core/adapter'
import { publishMany as mysqlPublishMany } from '@outboxkit/mysql'
import { publishMany as pgPublishMany } from '@outboxkit/pg'
import { type SqliteDatabase, publishMany as sqlitePublishMany } from '@outboxkit/sqlite'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { parseDatabaseUrl } from '../src/database-url.js'
import { binary, type Run } from './support/binary.js'
import { expectSeededDeadList, expectSeededStats } from './support/seeded-stats.js'

// better-sqlite3 is a dev dependency of the CLI without its @types: typed through @outboxkit/sqlite.
const Database = createRequire(import.meta.url)('better-sqlite3') as new (filename: string) => SqliteDatabase

const json = (r: Run) => JSON.parse(r.stdout)
const ok = (r: Run) => {
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' })
  return r
}

/** One database the session runs on: how to reach it, write to it and read it back. */
interface Fixture {
  readonly label: string
  /** `DATABASE_URL` for the CLI. */
  readonly url: string
  /** How the session names its table to the CLI: `--table` arguments and environment. */
  tableArgs(table: string): { args: string[]; env: Record<string, string> }
  /** Publishes `messages` with the database's own adapter, in a committed transaction. */
  publish(outbox: Outbox, messages: PublishMessage<Outbox>[]): Promise<void>
  /** Runs `sql` (`?` placeholders) and returns its rows. */
  query(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  /** The table's name, quoted for this database. */
  quote(table: string): string
  /** An SQL expression for the database clock's `now - ms`, in the column type of available_at. */
  ago(ms: number): string
  drop(table: string): Promise<void>
  close(): Promise<void>
}

function mariadbFixture(): Fixture {
  const pool = mysql.createPool({ uri: testMysqlUri(), connectionLimit: 2, timezone: 'Z' })
  const quote = (t: string) => `\`${t}\``
  return {
    label: 'MariaDB',
    url: testMysqlUri(),
    // MariaDB names the table through OUTBOX_TABLE, SQLite through --table: both ways are covered.
    tableArgs: (table) => ({ args: [], env: { OUTBOX_TABLE: table } }),
    async publish(outbox, messages) {
      const conn = await pool.getConnection()
      try {
        await conn.beginTransaction()
        await mysqlPublishMany(outbox, conn, messages)
        await conn.commit()
      } finally {
        conn.release()
      }
    },
    async query(sql, params = []) {
      const [rows] = await pool.query(sql, params)
      return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : []
    },
    quote,
    ago: (ms) => `DATE_SUB(UTC_TIMESTAMP(6), INTERVAL ${ms * 1000} MICROSECOND)`,
    async drop(table) {
      await pool.query(`DROP TABLE IF EXISTS ${quote(table)}`)
    },
    close: () => pool.end(),
  }
}

function sqliteFixture(dir: string): Fixture {
  const filename = join(dir, 'app.db')
  let db: SqliteDatabase | undefined
  const open = () => {
    db ??= new Database(filename)
    db.pragma('busy_timeout = 10000')
    return db
  }
  const quote = (t: string) => `"${t}"`
  return {
    label: 'SQLite',
    url: `sqlite:${filename}`,
    tableArgs: (table) => ({ args: ['--table', table], env: {} }),
    async publish(outbox, messages) {
      const conn = open()
      let written: Promise<unknown> | undefined
      conn.transaction(() => {
        written = sqlitePublishMany(outbox, conn, messages)
      })()
      await written
    },
    async query(sql, params = []) {
      const statement = open().prepare(sql)
      if (statement.reader) return statement.all(...params) as Record<string, unknown>[]
      statement.run(...params)
      return []
    },
    quote,
    ago: (ms) => `(${SQLITE_NOW_MS} - ${ms})`,
    async drop(table) {
      open().exec(`DROP TABLE IF EXISTS ${quote(table)}`)
    },
    async close() {
      db?.close()
    },
  }
}

const dir = mkdtempSync(join(tmpdir(), 'outboxkit-cli-'))
const fixtures = { mariadb: mariadbFixture(), sqlite: sqliteFixture(dir) }
const created: [Fixture, string][] = []
afterAll(async () => {
  for (const [fixture, table] of created) await fixture.drop(table)
  for (const fixture of Object.values(fixtures)) await fixture.close()
  rmSync(dir, { recursive: true, force: true })
})

function newTable(fixture: Fixture, prefix: string): { name: string; outbox: Outbox } {
  const name = uniqueTableName(prefix)
  created.push([fixture, name])
  return { name, outbox: defineOutbox({ table: name }) }
}

describe.each([
  ['MariaDB', fixtures.mariadb],
  ['SQLite', fixtures.sqlite],
])('a session on %s through the real binary', (_label, f) => {
  // About 15 runs of the binary (node + tsx, ~1 s of CPU each): a generous bound for a loaded machine.
  test('migrate, stats, dead list, redrive, discard, purge (human and --json)', {
    timeout: 180_000,
  }, async () => {
    const { name, outbox } = newTable(f, `cli_${f.label.toLowerCase()}`)
    const { args: tableArgs, env: tableEnv } = f.tableArgs(name)
    const env = { DATABASE_URL: f.url, ...tableEnv }
    const run = (args: string[]) => binary([...args, ...tableArgs], env)

    expect(ok(await run(['migrate'])).stdout).toBe(`migrated ${name}: table and indexes are in place\n`)
    expect(json(ok(await run(['migrate', '--json'])))).toEqual({ table: name, migrated: true })

    // 3 pending (one delayed an hour), 2 dead on email.send, 1 dead on sms.send, 1 delivered.
    await f.publish(outbox, [
      { topic: 'order.created', payload: { n: 1 } },
      { topic: 'order.created', payload: { n: 2 } },
      { topic: 'email.send', payload: { to: 'a@example.com' }, delayMs: 3_600_000 },
    ])
    const t = f.quote(name)
    await f.query(
      `UPDATE ${t} SET created_at = ${f.ago(300_000)}, available_at = ${f.ago(240_000)} WHERE topic = 'order.created'`,
    )
    const [oldEmail, newEmail, sms, delivered] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()]
    await f.query(
      `INSERT INTO ${t} (id, topic, payload, state, attempts, last_error, available_at) VALUES
         (?, 'email.send', '{"to":"x@example.com"}', 'dead', 10, 'smtp 550: mailbox unavailable', ${f.ago(2 * 86_400_000)}),
         (?, 'email.send', '{"to":"y@example.com"}', 'dead', 10, 'smtp 550: no such user', ${f.ago(3_600_000)}),
         (?, 'sms.send', '{"to":"+1555"}', 'dead', 1, 'invalid number', ${f.ago(0)}),
         (?, 'order.created', '{}', 'delivered', 1, NULL, ${f.ago(3 * 86_400_000)})`,
      [oldEmail, newEmail, sms, delivered],
    )

    const [statsRun, withDelivered, human] = await Promise.all([
      run(['stats', '--json']),
      run(['stats', '--json', '--delivered']),
      run(['stats']),
    ])
    const stats = json(ok(statsRun))
    expectSeededStats(stats, name)
    expect(json(ok(withDelivered)).states.delivered).toBe(1)
    ok(human)
    expect(human.stdout).toMatch(
      new RegExp(`^table ${name}\\n\\nstate\\s+messages\\npending\\s+3\\nprocessing\\s+0\\ndead\\s+3\\n`),
    )
    expect(human.stdout).toMatch(/oldest pending {3}5m \d\ds\noldest due lag {3}4m \d\ds\ndead {13}3\n/)
    expect(human.stdout).toMatch(/order\.created\s+2\s+0\s+0\s+5m \d\ds\s+4m \d\ds/)

    const [listRun, listed] = await Promise.all([
      run(['dead', 'list', '--json']),
      run(['dead', 'list', '--topic', 'email.send', '--limit', '1']),
    ])
    const list = json(ok(listRun))
    expectSeededDeadList(list, [sms, newEmail, oldEmail])
    expect(list[1]).toMatchObject({ headers: {} })
    const deadAgo = Date.now() - Date.parse(list[1].deadAt)
    expect(deadAgo).toBeGreaterThanOrEqual(3_600_000 - 5_000) // read in UTC from the database clock
    expect(deadAgo).toBeLessThan(3_600_000 + 60_000)
    expect(ok(listed).stdout).toContain('1 dead message(s)')
    expect(listed.stdout).toContain('(the newest 1; use --limit to see more)')
    expect(listed.stdout).toContain(newEmail)
    expect(listed.stdout).toContain('smtp 550: no such user')

    expect(json(ok(await run(['redrive', '--id', sms, '--json'])))).toEqual({ table: name, redriven: 1 })
    const after = await f.query(`SELECT state, attempts FROM ${t} WHERE id = ?`, [sms])
    expect(after.map((r) => ({ state: r.state, attempts: Number(r.attempts) }))).toEqual([
      { state: 'pending', attempts: 0 },
    ])

    expect(ok(await run(['discard', '--topic', 'email.send'])).stdout).toBe('discarded 2 dead message(s)\n')

    expect(json(ok(await run(['purge', '--older-than', '1d', '--json'])))).toEqual({
      table: name,
      purged: 1,
      states: ['dead', 'delivered'],
      olderThanMs: 86_400_000,
    })
    const left = await f.query(`SELECT topic, state FROM ${t} ORDER BY topic, state`)
    expect(left.map((r) => ({ topic: r.topic, state: r.state }))).toEqual([
      { topic: 'email.send', state: 'pending' },
      { topic: 'order.created', state: 'pending' },
      { topic: 'order.created', state: 'pending' },
      { topic: 'sms.send', state: 'pending' },
    ])
    expect(json(ok(await run(['dead', 'list', '--json'])))).toEqual([])
  })
})

describe('MariaDB specifics', () => {
  test('mariadb:// is accepted (rewritten to mysql:// for mysql2); a missing table, an unreachable server and a refused login exit 1 with their hint', async () => {
    const { name } = newTable(fixtures.mariadb, 'cli_mariadb_scheme')
    const mariadbUrl = testMysqlUri().replace(/^mysql:/, 'mariadb:')
    expect(mariadbUrl).toMatch(/^mariadb:\/\//)
    const migrated = ok(await binary(['migrate', '--table', name, '--json'], { DATABASE_URL: mariadbUrl }))
    expect(json(migrated)).toEqual({ table: name, migrated: true })
    const rows = await fixtures.mariadb.query(
      'SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?',
      [name],
    )
    expect(Number(rows[0]!.n)).toBe(1)

    const stranger = new URL(testMysqlUri())
    stranger.username = 'outboxkit_nobody'
    stranger.password = ''
    const [missing, unreachable, refused] = await Promise.all([
      binary(['stats', '--table', `${name}_none`], { DATABASE_URL: mariadbUrl }),
      binary(['stats', '--json'], { DATABASE_URL: 'mysql://root@127.0.0.1:1/test' }),
      binary(['stats'], { DATABASE_URL: stranger.href }),
    ])
    expect(refused).toMatchObject({ code: 1, stdout: '' })
    expect(refused.stderr).toMatch(
      /Access denied for user 'outboxkit_nobody'[\s\S]*\nThe server refused the login: check the user, password and database name in DATABASE_URL\.\n$/,
    )
    expect(missing).toMatchObject({ code: 1, stdout: '' })
    expect(missing.stderr).toMatch(/doesn't exist/)
    expect(missing.stderr).toContain(`create it with \`outboxkit migrate --table ${name}_none\``)
    expect(unreachable).toMatchObject({ code: 1, stdout: '' })
    expect(JSON.parse(unreachable.stderr).error).toEqual({
      code: 'DATABASE',
      message: expect.stringMatching(
        /ECONNREFUSED[\s\S]*\nCheck DATABASE_URL and that the MySQL\/MariaDB server is reachable from here\.$/,
      ),
    })
  })
})

describe('SQLite specifics', () => {
  test('only migrate creates the file; the CLI leaves the journal mode alone; a missing table or a schema exits 1 with its hint', async () => {
    const file = join(dir, 'sub', 'later.db')
    const missingDir = await binary(['stats'], { DATABASE_URL: `sqlite:${file}` })
    expect(missingDir).toMatchObject({ code: 1, stdout: '' })
    expect(missingDir.stderr).toContain(`the SQLite file ${file} must exist`)

    const fresh = join(dir, 'fresh.db')
    const url = `file://${fresh}`
    const [stats, list] = await Promise.all([
      binary(['stats'], { DATABASE_URL: url }),
      binary(['dead', 'list', '--json'], { DATABASE_URL: url }),
    ])
    for (const r of [stats, list]) {
      expect(r).toMatchObject({ code: 1, stdout: '' })
      expect(existsSync(fresh)).toBe(false)
    }
    expect(stats.stderr).toContain('unable to open database file')
    expect(stats.stderr).toContain(`Check DATABASE_URL: the SQLite file ${fresh} must exist`)
    expect(JSON.parse(list.stderr).error.code).toBe('DATABASE')

    ok(await binary(['migrate'], { DATABASE_URL: url, OUTBOX_TABLE: 'events' }))
    expect(existsSync(fresh)).toBe(true)
    const db = new Database(fresh)
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('delete')
      expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all()).toEqual([
        'events',
      ])
    } finally {
      db.close()
    }
    const missingTable = await binary(['stats', '--table', 'other'], { DATABASE_URL: `sqlite:${fresh}` })
    expect(missingTable).toMatchObject({ code: 1, stdout: '' })
    expect(missingTable.stderr).toContain('no such table: other')
    expect(missingTable.stderr).toContain('create it with `outboxkit migrate --table other`')
    const withSchema = await binary(['migrate', '--table', 'app.events'], { DATABASE_URL: `sqlite:${fresh}` })
    expect(withSchema).toMatchObject({ code: 1, stdout: '' })
    expect(withSchema.stderr).toContain('unknown database "app"')
    expect(withSchema.stderr).toContain('On SQLite, --table takes a plain table name')
  })

  test('DATABASE_URL forms: sqlite:<path>, sqlite:///abs, file:<path>, file:///abs; refusals', () => {
    const cwd = process.cwd()
    const parse = (url: string) => parseDatabaseUrl(url, 'stats')
    const forms: [string, ReturnType<typeof parse>][] = [
      ['sqlite:app.db', { dialect: 'sqlite', filename: join(cwd, 'app.db') }],
      ['sqlite:./data/app.db', { dialect: 'sqlite', filename: join(cwd, 'data/app.db') }],
      ['sqlite:/var/lib/app.db', { dialect: 'sqlite', filename: '/var/lib/app.db' }],
      ['sqlite:///var/lib/my%20app.db', { dialect: 'sqlite', filename: '/var/lib/my app.db' }],
      [
        'file:./prisma/dev.db?connection_limit=1',
        { dialect: 'sqlite', filename: join(cwd, 'prisma/dev.db') },
      ],
      ['FILE:///var/lib/app.db', { dialect: 'sqlite', filename: '/var/lib/app.db' }],
      ['mariadb://u:p@h:3306/db?ssl=true', { dialect: 'mysql', uri: 'mysql://u:p@h:3306/db?ssl=true' }],
      ['postgresql://u@h/db', { dialect: 'postgres', connectionString: 'postgresql://u@h/db' }],
    ]
    for (const [url, parsed] of forms) expect(parse(url), url).toEqual(parsed)
    const refusals: [string, RegExp][] = [
      ['sqlite:', /names no SQLite file/],
      ['sqlite::memory:', /in-memory SQLite database/],
      ['file:app.db?mode=memory', /in-memory SQLite database/],
      ['sqlite://app.db', /write sqlite:relative\/app\.db/],
      ['file://server/share/app.db', /file:\/\/ URL with a host/],
      ['/var/lib/app.db', /has no scheme/],
      ['redis://u:secret@h/0', /scheme "redis:", which the CLI does not know/],
    ]
    for (const [url, message] of refusals) {
      let error: unknown
      try {
        parse(url)
      } catch (e) {
        error = e
      }
      expect(error, url).toBeInstanceOf(Error)
      expect((error as Error).name, url).toBe('UsageError')
      expect((error as Error).message, url).toMatch(message)
      expect((error as Error).message, url).not.toContain('secret')
    }
  })
})

describe('every database, without a connection', () => {
  test('sql --dialect prints each dialect’s DDL; without it, the scheme of DATABASE_URL chooses, else PostgreSQL', {
    timeout: 120_000,
  }, async () => {
    const outbox = defineOutbox({ table: 'app_events' })
    const base = ['sql', '--table', 'app_events']
    const [postgres, mysqlDdl, sqlite, byMysqlUrl, bySqliteUrl, byDefault, overridden, asJson, bad] =
      await Promise.all([
        binary([...base, '--dialect', 'postgres'], {}),
        binary([...base, '--dialect', 'mysql'], {}),
        binary([...base, '--dialect', 'sqlite'], {}),
        binary(base, { DATABASE_URL: 'mariadb://app@db:3306/app' }),
        binary(base, { DATABASE_URL: 'file:./dev.db' }),
        binary(base, {}),
        binary([...base, '--dialect', 'sqlite'], { DATABASE_URL: 'postgres://app@db/app' }),
        binary([...base, '--dialect', 'mysql', '--json'], {}),
        binary([...base, '--dialect', 'oracle'], {}),
      ])
    expect(ok(postgres).stdout).toBe(`${outboxDdl(outbox).trimEnd()}\n`)
    expect(ok(mysqlDdl).stdout).toBe(`${mysqlOutboxDdl(outbox).trimEnd()}\n`)
    expect(ok(sqlite).stdout).toBe(`${sqliteOutboxDdl(outbox).trimEnd()}\n`)
    // The three are different statements, each in its own dialect.
    expect(mysqlDdl.stdout).toContain('CREATE TABLE IF NOT EXISTS `app_events`')
    expect(mysqlDdl.stdout).toContain('ENGINE=InnoDB')
    expect(sqlite.stdout).toContain('id TEXT PRIMARY KEY')
    expect(postgres.stdout).toContain('id uuid PRIMARY KEY')
    expect(ok(byMysqlUrl).stdout).toBe(mysqlDdl.stdout)
    expect(ok(bySqliteUrl).stdout).toBe(sqlite.stdout)
    expect(ok(byDefault).stdout).toBe(postgres.stdout)
    expect(ok(overridden).stdout).toBe(sqlite.stdout)
    expect(json(ok(asJson))).toEqual({ table: 'app_events', dialect: 'mysql', sql: mysqlOutboxDdl(outbox) })
    expect(bad).toMatchObject({ code: 2, stdout: '' })
    expect(bad.stderr).toMatch(
      /--dialect must be postgres, mysql \(also for MariaDB\) or sqlite, got "oracle"/,
    )
  })

  test('an unknown scheme exits 2 listing the accepted ones, and never prints the URL', async () => {
    const [stats, asJson, sql] = await Promise.all([
      binary(['stats'], { DATABASE_URL: 'mongodb://app:s3cret@db/app' }),
      binary(['dead', 'list', '--json'], { DATABASE_URL: 'mongodb://app:s3cret@db/app' }),
      binary(['sql'], { DATABASE_URL: 'mongodb://app:s3cret@db/app' }),
    ])
    expect(JSON.parse(asJson.stderr).error.code).toBe('USAGE')
    const message = (r: Run) => (r === asJson ? JSON.parse(r.stderr).error.message : r.stderr)
    for (const r of [stats, asJson, sql]) {
      expect(r).toMatchObject({ code: 2, stdout: '' })
      expect(r.stderr).not.toContain('s3cret')
      expect(message(r)).toContain('"mongodb:", which the CLI does not know')
      expect(message(r)).toContain(
        'Accepted: postgres:// or postgresql:// (PostgreSQL), mysql:// or mariadb:// (MySQL, MariaDB), sqlite:<path>, sqlite:///abs/path or file:<path> (SQLite).',
      )
    }
    expect(sql.stderr).toContain('Or say which DDL: --dialect postgres|mysql|sqlite.')
  })

  test('--help documents the schemes and the optional packages', async () => {
    const help = ok(await binary(['--help'], {}))
    expect(help.stdout).toContain(
      'mysql://user@host:3306/app       MySQL 8+ (also mariadb:// for MariaDB 10.6+)',
    )
    expect(help.stdout).toContain('sqlite:./app.db                  SQLite')
    expect(help.stdout).toContain('MySQL/MariaDB needs @outboxkit/mysql and mysql2 installed')
    const sqlHelp = ok(await binary(['sql', '--help'], {}))
    expect(sqlHelp.stdout).toMatch(/^outboxkit sql \[--dialect postgres\|mysql\|sqlite\]/)
  })
})

describe('optional packages (made unresolvable, as when not installed)', () => {
  const pgUrl = testDatabaseUrl()
  let pgTable: string
  let pool: pg.Pool
  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: pgUrl, max: 1 })
    pgTable = uniqueTableName('cli_optional')
    const outbox = defineOutbox({ table: pgTable })
    await pool.query(outboxDdl(outbox))
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await pgPublishMany(outbox, client, [{ topic: 't', payload: 1 }])
      await client.query('COMMIT')
    } finally {
      client.release()
    }
  })
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS "${pgTable}"`)
    await pool.end()
  })

  test('a missing @outboxkit/mysql, mysql2, @outboxkit/sqlite or better-sqlite3 exits 2 naming what to install', async () => {
    const sqliteUrl = `sqlite:${join(dir, 'optional.db')}`
    const cases: [string, string, string[], string][] = [
      [testMysqlUri(), '@outboxkit/mysql', ['stats'], 'npm install @outboxkit/mysql mysql2'],
      [testMysqlUri(), 'mysql2', ['dead', 'list'], 'npm install @outboxkit/mysql mysql2'],
      [sqliteUrl, '@outboxkit/sqlite', ['migrate'], 'npm install @outboxkit/sqlite better-sqlite3'],
      [sqliteUrl, 'better-sqlite3', ['purge', '--all'], 'npm install @outboxkit/sqlite better-sqlite3'],
    ]
    const runs = await Promise.all(
      cases.map(([url, hidden, args]) =>
        binary([...args, '--json'], { DATABASE_URL: url }, { hide: [hidden] }),
      ),
    )
    runs.forEach((r, i) => {
      const [, hidden, args, install] = cases[i]!
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' })
      const { error } = JSON.parse(r.stderr)
      expect(error.code).toBe('MISSING_PACKAGE')
      expect(error.message).toContain(`and ${hidden} is not installed`)
      expect(error.message).toContain(install)
    })
    expect(existsSync(join(dir, 'optional.db'))).toBe(false)
  })

  test('PostgreSQL and sql --dialect need none of them: they are loaded only for their scheme', async () => {
    const hide = ['@outboxkit/mysql', 'mysql2', '@outboxkit/sqlite', 'better-sqlite3']
    const [stats, ddl, human] = await Promise.all([
      binary(['stats', '--table', pgTable, '--json'], { DATABASE_URL: pgUrl }, { hide }),
      binary(['sql', '--dialect', 'mysql', '--table', pgTable], {}, { hide }),
      binary(['stats', '--table', pgTable], { DATABASE_URL: fixtures.mariadb.url }, { hide }),
    ])
    expect(json(ok(stats)).states.pending).toBe(1)
    expect(ok(ddl).stdout).toContain(`CREATE TABLE IF NOT EXISTS \`${pgTable}\``)
    // The hook works: the same command on MySQL does fail.
    expect(human.code).toBe(2)
  })
})
