import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, type Outbox } from '@outboxkit/core'
import { publishMany } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, describe, expect, test } from 'vitest'
import { runCli } from '../src/run.js'
import { expectSeededDeadList, expectSeededStats } from './support/seeded-stats.js'

// The real binary, run from source: node + tsx, with the root tsconfig mapping @outboxkit/* to src.
const root = fileURLToPath(new URL('../../../', import.meta.url))
const bin = fileURLToPath(new URL('../src/cli.ts', import.meta.url))
const url = testDatabaseUrl()
const pool = new pg.Pool({ connectionString: url, max: 3 })
const tables: string[] = []
afterAll(async () => {
  for (const t of tables) await pool.query(`DROP TABLE IF EXISTS "${t}"`)
  await pool.end()
})

interface Run {
  code: number
  stdout: string
  stderr: string
}

/** Runs the real binary in a child process. */
function binary(
  args: string[],
  env: Record<string, string | undefined> = { DATABASE_URL: url },
): Promise<Run> {
  const { DATABASE_URL: _u, OUTBOX_TABLE: _t, ...base } = process.env
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', bin, ...args],
      { cwd: root, env: { ...base, ...env } as NodeJS.ProcessEnv, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

/**
 * Runs the CLI in this process (`runCli`, the function the binary calls), for the many cases whose
 * process wiring the binary runs already cover: a child process with tsx costs ~0.6 s of CPU.
 */
async function cli(
  args: string[],
  env: Record<string, string | undefined> = { DATABASE_URL: url },
): Promise<Run> {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, {
    stdout: (text) => {
      stdout += `${text}\n`
    },
    stderr: (text) => {
      stderr += `${text}\n`
    },
    env,
  })
  return { code, stdout, stderr }
}

const json = (r: Run) => JSON.parse(r.stdout)

function newTable(prefix: string): { name: string; outbox: Outbox } {
  const name = uniqueTableName(prefix)
  tables.push(name)
  return { name, outbox: defineOutbox({ table: name }) }
}

describe('the real binary (node, a child process)', () => {
  test('exit codes and streams: --help 0, usage error 2 (JSON on stderr), missing DATABASE_URL 2, unreachable server 1, a missing table 1, a --json command 0', async () => {
    const { name } = newTable('cli_bin')
    const [help, usage, noUrl, unreachable, missing] = await Promise.all([
      binary(['--help'], {}),
      binary(['redrive', '--json']),
      binary(['stats'], {}),
      binary(['stats'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' }),
      binary(['stats', '--table', name]),
    ])
    expect(help).toMatchObject({ code: 0, stderr: '' })
    expect(help.stdout).toMatch(
      /^outboxkit: operate an outboxkit outbox table on PostgreSQL, MySQL\/MariaDB or SQLite\n/,
    )
    expect(usage).toMatchObject({ code: 2, stdout: '' })
    expect(JSON.parse(usage.stderr).error.code).toBe('USAGE')
    expect(noUrl).toMatchObject({ code: 2, stdout: '' })
    expect(noUrl.stderr).toMatch(/^outboxkit: DATABASE_URL is not set/)
    expect(unreachable).toMatchObject({ code: 1, stdout: '' })
    expect(unreachable.stderr).toMatch(
      /ECONNREFUSED[\s\S]*Check DATABASE_URL and that PostgreSQL is reachable/,
    )
    expect(missing).toMatchObject({ code: 1, stdout: '' })
    expect(missing.stderr).toContain(`create it with \`outboxkit migrate --table ${name}\``)
    const migrated = await binary(['migrate', '--table', name, '--json'])
    expect(migrated).toMatchObject({ code: 0, stderr: '' })
    expect(JSON.parse(migrated.stdout)).toEqual({ table: name, migrated: true })
    const stats = await binary(['stats', '--table', name])
    expect(stats).toMatchObject({ code: 0, stderr: '' })
    expect(stats.stdout).toBe(
      `table ${name}\n\nstate       messages\npending            0\nprocessing         0\ndead               0\n\noldest pending   -\noldest due lag   -\ndead             0\n`,
    )
  })
})

describe('outboxkit CLI: help and usage errors (exit 2)', () => {
  test('--help on the program and on every command exits 0 and documents it', async () => {
    const runs = await Promise.all(
      [[], ['migrate'], ['sql'], ['stats'], ['dead', 'list'], ['redrive'], ['discard'], ['purge']].map((c) =>
        cli([...c, '--help'], {}),
      ),
    )
    for (const r of runs) {
      expect(r.code).toBe(0)
      expect(r.stderr).toBe('')
      expect(r.stdout).toContain('--table <name>')
      expect(r.stdout).toContain('Exit codes: 0 ok, 1 operational error')
    }
    expect(runs[0]!.stdout).toMatch(
      /Commands:\n {2}migrate .*\n {2}sql .*\n {2}stats .*\n {2}dead list .*\n {2}blocked .*\n {2}redrive .*\n {2}discard .*\n {2}purge /,
    )
    expect(runs[5]!.stdout).toMatch(
      /^outboxkit redrive \(--id <id>\.\.\. \| --topic <topic>\.\.\. \| --all\)/,
    )
  })

  test('usage errors exit 2 with a message on stderr and nothing on stdout', async () => {
    const cases: [string[], Record<string, string | undefined>, RegExp][] = [
      [[], {}, /Usage: outboxkit <command>/],
      [['frobnicate'], {}, /unknown command "frobnicate"/],
      [['dead'], {}, /dead needs a subcommand/],
      [['stats', '--frob'], {}, /Unknown option '--frob'/],
      [['stats', 'extra'], {}, /unexpected argument "extra"/],
      [['redrive'], { DATABASE_URL: url }, /say which dead messages: --id <id>, --topic <topic>, or --all/],
      [['discard', '--all', '--topic', 'a'], { DATABASE_URL: url }, /--all cannot be combined/],
      [['redrive', '--id', 'nope'], { DATABASE_URL: url }, /--id must be a message id/],
      [['purge'], { DATABASE_URL: url }, /--older-than <duration>/],
      [['purge', '--older-than', '3 days'], { DATABASE_URL: url }, /must be a duration like 30s/],
      [['purge', '--all', '--state', 'pending'], { DATABASE_URL: url }, /--state must be dead or delivered/],
      [['dead', 'list', '--limit', '0'], { DATABASE_URL: url }, /--limit must be an integer from 1 to 10000/],
      [['stats'], {}, /DATABASE_URL is not set/],
      [['stats', '--table', 'bad-name!'], { DATABASE_URL: url }, /is not a valid name/],
    ]
    const runs = await Promise.all(cases.map(([args, env]) => cli(args, env)))
    runs.forEach((r, i) => {
      const [args, , pattern] = cases[i]!
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' })
      expect(r.stderr).toMatch(pattern)
    })
  })

  test('--json errors are JSON on stderr', async () => {
    const r = await cli(['redrive', '--json'])
    expect(r.code).toBe(2)
    expect(JSON.parse(r.stderr)).toEqual({
      error: { code: 'USAGE', message: expect.stringMatching(/^say which dead messages/) },
    })
  })
})

describe('outboxkit CLI against PostgreSQL', () => {
  test('operational errors exit 1: a missing table (with the migrate hint) and an unreachable server', async () => {
    const { name } = newTable('cli_missing')
    const [missing, unreachable] = await Promise.all([
      cli(['stats', '--table', name]),
      cli(['stats', '--json'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' }),
    ])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain(`relation "${name}" does not exist`)
    expect(missing.stderr).toContain(`create it with \`outboxkit migrate --table ${name}\``)
    expect(unreachable.code).toBe(1)
    expect(JSON.parse(unreachable.stderr).error).toMatchObject({
      code: 'DATABASE',
      message: expect.stringMatching(/ECONNREFUSED/),
    })
  })

  test('a session: migrate, stats, dead list, redrive, discard, purge (human and --json)', async () => {
    const { name, outbox } = newTable('cli_session')
    const migrated = await cli(['migrate', '--table', name])
    expect(migrated).toMatchObject({ code: 0, stderr: '' })
    expect(migrated.stdout).toBe(`migrated ${name}: table and indexes are in place\n`)
    expect((await cli(['migrate', '--table', name, '--json'])).stdout).toBe(
      `${JSON.stringify({ table: name, migrated: true }, null, 2)}\n`,
    )

    // 3 pending (one delayed an hour), 2 dead on email.send, 1 dead on sms.send, 1 delivered.
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await publishMany(outbox, client, [
        { topic: 'order.created', payload: { n: 1 } },
        { topic: 'order.created', payload: { n: 2 } },
        { topic: 'email.send', payload: { to: 'a@example.com' }, delayMs: 3_600_000 },
      ])
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    await pool.query(
      `UPDATE "${name}" SET created_at = now() - interval '5 minutes', available_at = now() - interval '4 minutes' WHERE topic = 'order.created'`,
    )
    const dead = await pool.query<{ id: string }>(
      `INSERT INTO "${name}" (id, topic, payload, state, attempts, last_error, available_at) VALUES
         (gen_random_uuid(), 'email.send', '{"to":"x@example.com"}', 'dead', 10, 'smtp 550: mailbox unavailable', now() - interval '2 days'),
         (gen_random_uuid(), 'email.send', '{"to":"y@example.com"}', 'dead', 10, 'smtp 550: no such user', now() - interval '1 hour'),
         (gen_random_uuid(), 'sms.send', '{"to":"+1555"}', 'dead', 1, 'invalid number', now()),
         (gen_random_uuid(), 'order.created', '{}', 'delivered', 1, NULL, now() - interval '3 days')
       RETURNING id::text, topic, available_at`,
    )
    const [oldEmail, newEmail, sms] = dead.rows.map((r) => r.id)

    const stats = json(await cli(['stats', '--table', name, '--json']))
    expectSeededStats(stats, name)
    expect(json(await cli(['stats', '--table', name, '--json', '--delivered'])).states.delivered).toBe(1)

    const human = await cli(['stats', '--table', name])
    expect(human.code).toBe(0)
    expect(human.stdout.startsWith(`table ${name}\n`)).toBe(true)
    expect(human.stdout).toMatch(/^table \S+\n\nstate\s+messages\npending\s+3\nprocessing\s+0\ndead\s+3\n/)
    expect(human.stdout).toMatch(/oldest pending {3}5m \d\ds\noldest due lag {3}4m \d\ds\ndead {13}3\n/)
    expect(human.stdout).toMatch(/order\.created\s+2\s+0\s+0\s+5m \d\ds\s+4m \d\ds/)

    const list = json(await cli(['dead', 'list', '--table', name, '--json']))
    expectSeededDeadList(list, [sms, newEmail, oldEmail])
    const listed = await cli(['dead', 'list', '--table', name, '--topic', 'email.send', '--limit', '1'])
    expect(listed.stdout).toContain('1 dead message(s)')
    expect(listed.stdout).toContain('(the newest 1; use --limit to see more)')
    expect(listed.stdout).toContain(newEmail)
    expect(listed.stdout).toContain('smtp 550: no such user')

    expect(json(await cli(['redrive', '--table', name, '--id', sms!, '--json']))).toEqual({
      table: name,
      redriven: 1,
    })
    const { rows: after } = await pool.query(`SELECT state, attempts FROM "${name}" WHERE id = $1`, [sms])
    expect(after[0]).toEqual({ state: 'pending', attempts: 0 })

    const discarded = await cli(['discard', '--table', name, '--topic', 'email.send'])
    expect(discarded).toMatchObject({ code: 0, stdout: 'discarded 2 dead message(s)\n' })

    const purged = await cli(['purge', '--table', name, '--older-than', '1d', '--json'])
    expect(json(purged)).toEqual({
      table: name,
      purged: 1,
      states: ['dead', 'delivered'],
      olderThanMs: 86_400_000,
    })
    const { rows: left } = await pool.query(`SELECT topic, state FROM "${name}" ORDER BY topic, state`)
    expect(left).toEqual([
      { topic: 'email.send', state: 'pending' },
      { topic: 'order.created', state: 'pending' },
      { topic: 'order.created', state: 'pending' },
      { topic: 'sms.send', state: 'pending' },
    ])
    expect(json(await cli(['dead', 'list', '--table', name, '--json']))).toEqual([])
  })

  test('blocked lists the keys of ordered topics held back by their head (human and --json)', async () => {
    const name = uniqueTableName('cli_blocked')
    tables.push(name)
    const outbox = defineOutbox({
      table: name,
      orderedTopics: ['ledger.entry', { topic: 'email.send', onDeadLetter: 'continue' }],
    })
    expect((await cli(['migrate', '--table', name])).code).toBe(0)
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await publishMany(outbox, client, [
        ...[1, 2, 3].map((n) => ({ topic: 'ledger.entry', key: 'acct-1', payload: { n } })),
        ...[1, 2].map((n) => ({ topic: 'email.send', key: 'mail-1', payload: { n } })),
        ...[1, 2].map((n) => ({ topic: 'ledger.entry', key: 'acct-2', payload: { n } })),
        { topic: 'ledger.entry', key: 'acct-3', payload: { n: 1 } },
      ])
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    // Each key's head (lowest seq): acct-1 and mail-1 dead, acct-2 retrying in an hour, acct-3 due.
    const head = (key: string) => `id = (SELECT id FROM "${name}" WHERE key = '${key}' ORDER BY seq LIMIT 1)`
    await pool.query(
      `UPDATE "${name}" SET state = 'dead', attempts = 10, last_error = 'ledger down' WHERE ${head('acct-1')} OR ${head('mail-1')}`,
    )
    await pool.query(
      `UPDATE "${name}" SET attempts = 1, last_error = 'timeout', available_at = now() + interval '1 hour' WHERE ${head('acct-2')}`,
    )
    const { rows: heads } = await pool.query<{ key: string; id: string }>(
      `SELECT DISTINCT ON (key) key, id::text FROM "${name}" ORDER BY key, seq`,
    )
    const headId = Object.fromEntries(heads.map((r) => [r.key, r.id]))

    const dead = json(await cli(['blocked', '--table', name, '--json']))
    expect(
      dead.map((k: { key: string; reason: string; waiting: number }) => [k.key, k.reason, k.waiting]),
    ).toEqual([
      ['acct-1', 'dead', 2],
      ['mail-1', 'dead', 1],
    ])
    expect(dead[0].head).toMatchObject({
      id: headId['acct-1'],
      topic: 'ledger.entry',
      attempts: 10,
      lastError: 'ledger down',
    })

    const continued = json(
      await cli(['blocked', '--table', name, '--continue-topic', 'email.send', '--retrying', '--json']),
    )
    expect(continued.map((k: { key: string; reason: string }) => [k.key, k.reason])).toEqual([
      ['acct-1', 'dead'],
      ['acct-2', 'retrying'],
    ])
    const paged = json(await cli(['blocked', '--table', name, '--limit', '1', '--after', 'acct-1', '--json']))
    expect(paged.map((k: { key: string }) => k.key)).toEqual(['mail-1'])

    const human = await cli(['blocked', '--table', name, '--topic', 'ledger.entry'])
    expect(human).toMatchObject({ code: 0, stderr: '' })
    expect(human.stdout).toContain(`1 blocked key(s) in ${name}:`)
    expect(human.stdout).toMatch(
      new RegExp(`acct-1\\s+dead\\s+2\\s+${headId['acct-1']}\\s+ledger\\.entry\\s+10\\s`),
    )
    expect(human.stdout).toContain('ledger down')

    expect(await cli(['redrive', '--table', name, '--id', headId['acct-1']!])).toMatchObject({ code: 0 })
    expect(json(await cli(['blocked', '--table', name, '--topic', 'ledger.entry', '--json']))).toEqual([])
    expect((await cli(['blocked', '--table', name, '--limit', '0'])).code).toBe(2)
  })

  test('sql prints the DDL without a database; OUTBOX_TABLE is the default table', async () => {
    const r = await cli(['sql'], { OUTBOX_TABLE: 'app.events' })
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('CREATE TABLE IF NOT EXISTS "app"."events"')
    expect(r.stdout).toContain('CREATE INDEX IF NOT EXISTS "events_due_idx"')
  })
})
