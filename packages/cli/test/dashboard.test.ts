// `outboxkit dashboard`: the real binary in a child process, on PostgreSQL and on a SQLite file.
// It binds 127.0.0.1, is read-only unless --allow-writes (checked by raw SQL), and stops on SIGTERM.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import {
  type OutboxSql,
  outboxSql,
  removeSqliteFile,
  serverInspector,
  sqliteInspector,
  tempSqliteFile,
  testDatabaseUrl,
  uniqueTableName,
} from '@outboxkit/conformance'
import { defineOutbox, migrate } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import { sqliteBackend } from '@outboxkit/sqlite'
import { afterAll, describe, expect, test } from 'vitest'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const bin = fileURLToPath(new URL('../src/cli.ts', import.meta.url))

interface Served {
  url: string
  child: ChildProcess
  stderr: () => string
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>
}

/** Starts `outboxkit dashboard --port 0 ...args --json` and waits for the line with its URL. */
function startDashboard(args: string[], env: Record<string, string>): Promise<Served> {
  const { DATABASE_URL: _u, OUTBOX_TABLE: _t, ...base } = process.env
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', bin, 'dashboard', '--port', '0', '--json', ...args],
    {
      cwd: root,
      env: { ...base, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let out = ''
  let err = ''
  child.stderr!.on('data', (d) => {
    err += String(d)
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL in 60 s; stderr: ${err}`)), 60_000)
    child.stdout!.on('data', (d) => {
      out += String(d)
      try {
        const { url } = JSON.parse(out) as { url: string }
        clearTimeout(timer)
        resolve({
          url,
          child,
          stderr: () => err,
          stop: () => {
            child.kill('SIGTERM')
            return exited
          },
        })
      } catch {}
    })
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`exited ${code} before serving; stderr: ${err}`))
    })
  })
}

const file = tempSqliteFile('cli_dash')
const targets = [
  { name: 'postgres', url: testDatabaseUrl() },
  { name: 'sqlite', url: `sqlite:${file}` },
] as const
const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const c of cleanups) await c()
  removeSqliteFile(file)
})

describe.each(targets)('$name', ({ name, url }) => {
  async function seeded(): Promise<{ table: string; id: string; sql: OutboxSql }> {
    const table = uniqueTableName('cli_dash')
    const outbox = defineOutbox({ table })
    const backend =
      name === 'postgres' ? pgBackend({ connectionString: url, max: 1 }) : sqliteBackend({ filename: file })
    await migrate(outbox, backend)
    await backend.close()
    const inspector = name === 'postgres' ? serverInspector(url) : sqliteInspector(file)
    const sql = outboxSql(name, (text, params) => inspector.query(text, params))
    cleanups.push(async () => {
      await sql.drop(table).catch(() => {})
      await inspector.close()
    })
    const [id] = await sql.insert(table, [
      { topic: 'a', key: 'k-1', state: 'dead', attempts: 3, lastError: 'boom' },
    ])
    return { table, id: id!, sql }
  }

  const redrive = (served: Served, id: string) =>
    fetch(`${served.url}api/dead/${id}/redrive`, {
      method: 'POST',
      headers: { origin: new URL(served.url).origin },
    })

  test('read-only by default on 127.0.0.1: the page and the API answer, a POST is 403; SIGTERM exits 0', async () => {
    const { table, id, sql } = await seeded()
    const served = await startDashboard(['--table', table], { DATABASE_URL: url })
    try {
      expect(new URL(served.url).hostname).toBe('127.0.0.1')
      expect((await fetch(served.url)).headers.get('content-type')).toMatch(/^text\/html/)
      const stats = (await (await fetch(`${served.url}api/stats`)).json()) as {
        dead: number
        writable: boolean
      }
      expect(stats).toMatchObject({ dead: 1, writable: false })
      const dead = (await (await fetch(`${served.url}api/dead?q=k-1`)).json()) as {
        messages: { id: string }[]
      }
      expect(dead.messages.map((m) => m.id)).toEqual([id])
      expect((await redrive(served, id)).status).toBe(403)
      expect((await sql.row(table, id))?.state).toBe('dead')
    } finally {
      expect(await served.stop()).toBe(0)
    }
  })

  test('--allow-writes: Redrive through the API makes the row pending', async () => {
    const { table, id, sql } = await seeded()
    const served = await startDashboard(['--table', table, '--allow-writes'], { DATABASE_URL: url })
    try {
      const response = await redrive(served, id)
      expect(response.status).toBe(200)
      expect(await sql.row(table, id)).toMatchObject({ state: 'pending', attempts: 0 })
    } finally {
      expect(await served.stop()).toBe(0)
    }
  })
})
