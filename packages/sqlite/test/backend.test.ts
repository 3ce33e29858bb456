import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { invalidConfigMessage, uniqueTableName, waitFor } from '@outboxkit/conformance'
import {
  defineOutbox,
  discard,
  isOutboxError,
  listBlockedKeys,
  listDead,
  migrate,
  type OutboxBackend,
  outboxStats,
  redrive,
} from '@outboxkit/core'
import type { ClaimRequest } from '@outboxkit/core/adapter'
import { publishMany, sqliteBackend } from '@outboxkit/sqlite'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { type TempDatabase, tableRows, tempDatabase } from './support.js'

let temp: TempDatabase
let db: Database.Database
let backend: OutboxBackend
const table = uniqueTableName('sqlite_backend')
const outbox = defineOutbox({ table })
const ordered = defineOutbox({
  table,
  orderedTopics: ['o', { topic: 'oc', onDeadLetter: 'continue' }],
})
const others: OutboxBackend[] = []

const claimRequest = (limit: number, more: Partial<ClaimRequest> = {}): ClaimRequest => ({
  table: outbox.table,
  topics: ['t'],
  limit,
  leaseMs: 30_000,
  maxAttempts: 10,
  ...more,
})
/** Rows written straight with SQL (the test's own connection), due now unless told. */
function insert(
  n: number,
  fields: { topic?: string; state?: string; attempts?: number; dueInMs?: number } = {},
) {
  const ids: string[] = []
  const stmt = db.prepare(
    `INSERT INTO "${table}" (id, topic, payload, state, attempts, available_at)
     VALUES (?, ?, ?, ?, ?, CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER) + ?)`,
  )
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const id = crypto.randomUUID()
      ids.push(id)
      stmt.run(
        id,
        fields.topic ?? 't',
        JSON.stringify({ i }),
        fields.state ?? 'pending',
        fields.attempts ?? 0,
        fields.dueInMs ?? -1_000,
      )
    }
  })()
  return ids
}
const row = (id: string) =>
  db
    .prepare(
      `SELECT state, attempts, last_error, available_at - CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER) AS due_in_ms FROM "${table}" WHERE id = ?`,
    )
    .get(id) as { state: string; attempts: number; last_error: string | null; due_in_ms: number } | undefined

beforeAll(async () => {
  temp = tempDatabase('backend')
  db = temp.open()
  backend = sqliteBackend(db)
  await migrate(outbox, backend)
})
beforeEach(() => {
  db.exec(`DELETE FROM "${table}"`)
})
afterAll(async () => {
  await Promise.all(others.map((b) => b.close()))
  temp.cleanup()
})

/** A backend with its own connection to the test's file (closed after the file's tests). */
function ownBackend(options: { busyTimeoutMs?: number } = {}) {
  const b = sqliteBackend({ filename: temp.file, ...options })
  others.push(b)
  return b
}

describe('claims', () => {
  test('attempts count at claim and the lease is written in the same statement', async () => {
    const ids = insert(3)
    insert(2, { dueInMs: 60_000 })
    insert(1, { topic: 'other' })
    const claimed = await backend.claim(claimRequest(10, { leaseMs: 20_000 }))
    expect(claimed.map((c) => c.id).sort()).toEqual([...ids].sort())
    for (const c of claimed) {
      expect(c).toMatchObject({ state: 'processing', attempts: 1, headers: '{}' })
      expect(JSON.parse(c.payload)).toHaveProperty('i')
      const r = row(c.id)!
      expect(r.state).toBe('processing')
      expect(r.attempts).toBe(1)
      expect(r.due_in_ms).toBeGreaterThan(15_000)
      expect(r.due_in_ms).toBeLessThanOrEqual(20_000)
    }
    expect(await backend.claim(claimRequest(10))).toEqual([])
  })

  test('a lapsed lease makes the row claimable again, with the attempt counted', async () => {
    const [id] = insert(1)
    expect((await backend.claim(claimRequest(1, { leaseMs: 200 })))[0]!.attempts).toBe(1)
    expect(await backend.claim(claimRequest(1))).toEqual([])
    const again = await waitFor(async () => (await backend.claim(claimRequest(1)))[0], {
      what: 'the lease to lapse',
      timeoutMs: 5_000,
    })
    expect(again.id).toBe(id)
    expect(again.attempts).toBe(2)
  })

  test('a row that used maxAttempts is dead-lettered at claim, not returned for delivery', async () => {
    const [id] = insert(1, { state: 'processing', attempts: 3 })
    db.prepare(`UPDATE "${table}" SET last_error = 'boom' WHERE id = ?`).run(id)
    const [c] = await backend.claim(claimRequest(5, { maxAttempts: 3 }))
    expect(c).toMatchObject({ id, state: 'dead', attempts: 3 })
    const r = row(id!)!
    expect(r.state).toBe('dead')
    expect(r.attempts).toBe(3)
    expect(r.last_error).toMatch(/lease expired after attempt 3 of 3.*previous error: boom/)
    expect(await backend.claim(claimRequest(5, { maxAttempts: 3 }))).toEqual([])
  })

  test('two backends on two connections to one file (WAL) claim disjoint rows, waiting for the lock without blocking', async () => {
    const ids = insert(300)
    const a = ownBackend()
    const b = ownBackend()
    // A third connection holds the write lock: both claims must wait for it, and the event loop
    // must keep running meanwhile (a timer fires), since this process may be the one to release it.
    const holder = temp.open()
    holder.exec('BEGIN IMMEDIATE')
    const seen: string[] = []
    const loop = async (backend: OutboxBackend) => {
      for (;;) {
        const got = await backend.claim(claimRequest(7))
        if (got.length === 0) return
        seen.push(...got.map((g) => g.id))
      }
    }
    const running = Promise.all([loop(a), loop(b), loop(backend)])
    let ticked = false
    await new Promise<void>((resolve) =>
      setTimeout(() => {
        ticked = true
        resolve()
      }, 20),
    )
    expect(ticked).toBe(true)
    expect(seen).toEqual([]) // nobody could claim while the lock was held
    holder.exec('COMMIT')
    await running
    expect(seen).toHaveLength(300)
    expect(new Set(seen).size).toBe(300)
    expect([...seen].sort()).toEqual([...ids].sort())
  })

  test('claims from three processes on one file are disjoint: every row is claimed exactly once', async () => {
    const ids = insert(3_000)
    const worker = fileURLToPath(new URL('./claim-worker.ts', import.meta.url))
    const root = fileURLToPath(new URL('../../../', import.meta.url))
    const children = Array.from({ length: 3 }, () => {
      const child = spawn(process.execPath, ['--import', 'tsx', worker, temp.file, table, '13'], {
        cwd: root,
        env: { ...process.env, TSX_TSCONFIG_PATH: `${root}tsconfig.json` },
        stdio: ['pipe', 'pipe', 'pipe'],
      })
      let out = ''
      let err = ''
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d
      })
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        err += d
      })
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
      return { child, exited, out: () => out, err: () => err }
    })
    try {
      await waitFor(() => children.every((c) => c.out().includes('ready\n')), {
        what: 'the claiming processes to start',
        timeoutMs: 60_000,
      })
      for (const c of children) c.child.stdin.write('go\n')
      const codes = await Promise.all(children.map((c) => c.exited))
      expect(codes, children.map((c) => c.err()).join('\n')).toEqual([0, 0, 0])
    } finally {
      for (const c of children) if (c.child.exitCode === null) c.child.kill('SIGKILL')
    }
    const results = children.map(
      (c) => JSON.parse(c.out().split('\n')[1]!) as { ids: string[]; claims: number },
    )
    const seen = results.flatMap((r) => r.ids)
    expect(seen).toHaveLength(3_000)
    expect(new Set(seen).size).toBe(3_000)
    expect([...seen].sort()).toEqual([...ids].sort())
    // The claims really overlapped in time: more than one process took rows. (Not necessarily all
    // three: waiting for SQLite's lock is not first come, first served, and a process that keeps
    // finding it taken can see the others drain the table first.)
    expect(results.filter((r) => r.ids.length > 0).length).toBeGreaterThanOrEqual(2)
    const rows = tableRows(db, table)
    expect(rows.every((r) => r.state === 'processing' && r.attempts === 1)).toBe(true)
  }, 120_000)

  test('a claim never runs inside a transaction someone keeps open on a shared connection', async () => {
    const [id] = insert(1)
    db.exec('BEGIN')
    try {
      // The connection is in the user's transaction (a BEGIN kept across an await): no claim.
      expect(await backend.claim(claimRequest(10))).toEqual([])
      expect(row(id!)).toMatchObject({ state: 'pending', attempts: 0 })
    } finally {
      db.exec('ROLLBACK')
    }
    // Had the claim run in that transaction, the ROLLBACK would have undone it and the row would
    // be pending with a handler running; instead the next claim takes it.
    expect(row(id!)).toMatchObject({ state: 'pending', attempts: 0 })
    expect((await backend.claim(claimRequest(10))).map((c) => c.id)).toEqual([id])
  })

  test('other writes wait (without blocking) for that transaction to end, then apply outside it', async () => {
    const [id] = insert(1)
    const [c] = await backend.claim(claimRequest(1))
    db.exec('BEGIN')
    let settled: string[] | undefined
    const settling = backend
      .settle({
        table: outbox.table,
        keepDelivered: true,
        settlements: [{ id: c!.id, attempts: 1, outcome: 'delivered' }],
      })
      .then((ids) => {
        settled = ids
      })
    await new Promise((r) => setTimeout(r, 30))
    expect(settled).toBeUndefined()
    db.exec('ROLLBACK')
    await settling
    expect(settled).toEqual([id])
    expect(row(id!)!.state).toBe('delivered')
  })

  test('a write lock held past busyTimeoutMs fails the claim with TIMEOUT', async () => {
    insert(1)
    const impatient = ownBackend({ busyTimeoutMs: 150 })
    const holder = temp.open()
    holder.exec('BEGIN IMMEDIATE')
    try {
      const started = Date.now()
      const err = await impatient.claim(claimRequest(1)).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(isOutboxError(err, 'TIMEOUT'), String(err)).toBe(true)
      expect((err as Error).message).toMatch(
        /^\[outboxkit\] \[sqlite\] claim waited \d+ ms for SQLite's write lock/,
      )
      expect(Date.now() - started).toBeGreaterThanOrEqual(140)
    } finally {
      holder.exec('ROLLBACK')
    }
    expect(await impatient.claim(claimRequest(1))).toHaveLength(1)
  })
})

describe('settles', () => {
  test('delivered deletes (or keeps), retry reschedules, dead dead-letters, in one batch', async () => {
    insert(4)
    const [a, b, c, d] = await backend.claim(claimRequest(4))
    const applied = await backend.settle({
      table: outbox.table,
      keepDelivered: false,
      settlements: [
        { id: a!.id, attempts: 1, outcome: 'retry', delayMs: 45_000, error: 'try later' },
        { id: b!.id, attempts: 1, outcome: 'dead', error: 'give up' },
        { id: c!.id, attempts: 1, outcome: 'delivered' },
      ],
    })
    expect(applied.sort()).toEqual([a!.id, b!.id, c!.id].sort())
    expect(row(a!.id)).toMatchObject({ state: 'pending', last_error: 'try later' })
    expect(row(a!.id)!.due_in_ms).toBeGreaterThan(40_000)
    expect(row(b!.id)).toMatchObject({ state: 'dead', last_error: 'give up' })
    expect(row(c!.id)).toBeUndefined()
    await backend.settle({
      table: outbox.table,
      keepDelivered: true,
      settlements: [{ id: d!.id, attempts: 1, outcome: 'delivered' }],
    })
    expect(row(d!.id)!.state).toBe('delivered')
  })

  test('settles are fenced by attempts: a stale relay cannot overwrite a newer claim', async () => {
    const [id] = insert(1)
    await backend.claim(claimRequest(1, { leaseMs: 1 }))
    await waitFor(async () => (await backend.claim(claimRequest(1)))[0], { what: 'the reclaim' })
    expect(row(id!)!.attempts).toBe(2)
    for (const s of [
      { id: id!, attempts: 1, outcome: 'delivered' as const },
      { id: id!, attempts: 1, outcome: 'retry' as const, delayMs: 0, error: 'stale' },
      { id: id!, attempts: 1, outcome: 'dead' as const, error: 'stale' },
    ]) {
      for (const keepDelivered of [false, true]) {
        expect(await backend.settle({ table: outbox.table, keepDelivered, settlements: [s] })).toEqual([])
        expect(row(id!)).toMatchObject({ state: 'processing', attempts: 2, last_error: null })
      }
    }
    expect(
      await backend.extendLease!({ table: outbox.table, leaseMs: 60_000, rows: [{ id: id!, attempts: 1 }] }),
    ).toEqual([])
    expect(
      await backend.extendLease!({ table: outbox.table, leaseMs: 60_000, rows: [{ id: id!, attempts: 2 }] }),
    ).toEqual([id])
    expect(row(id!)!.due_in_ms).toBeGreaterThan(50_000)
    expect(
      await backend.settle({
        table: outbox.table,
        keepDelivered: false,
        settlements: [{ id: id!, attempts: 2, outcome: 'delivered' }],
      }),
    ).toEqual([id])
  })

  test('a settle after dead-letter at claim is fenced by state', async () => {
    const [id] = insert(1, { state: 'processing', attempts: 2 })
    await backend.claim(claimRequest(1, { maxAttempts: 2 }))
    expect(
      await backend.settle({
        table: outbox.table,
        keepDelivered: false,
        settlements: [{ id: id!, attempts: 2, outcome: 'delivered' }],
      }),
    ).toEqual([])
    expect(row(id!)!.state).toBe('dead')
  })
})

describe('ordered topics', () => {
  const claimOrdered = (limit = 10) =>
    backend.claim({
      ...claimRequest(limit, { topics: ['o', 'oc'] }),
      ordering: { continueAfterDead: ['oc'] },
    })

  test('only the head of each key is claimed; the next one after the head settles', async () => {
    db.transaction(() => {
      void publishMany(ordered, db, [
        { topic: 'o', key: 'a', payload: 1 },
        { topic: 'o', key: 'a', payload: 2 },
        { topic: 'o', key: 'b', payload: 1 },
        { topic: 'o', key: 'a', payload: 3 },
      ])
    })()
    const first = await claimOrdered()
    expect(first.map((r) => [r.key, JSON.parse(r.payload)]).sort()).toEqual([
      ['a', 1],
      ['b', 1],
    ])
    expect(first.every((r) => r.ordered === true)).toBe(true)
    expect(await claimOrdered()).toEqual([]) // heads still processing
    const headA = first.find((r) => r.key === 'a')!
    await backend.settle({
      table: outbox.table,
      keepDelivered: false,
      settlements: [{ id: headA.id, attempts: 1, outcome: 'retry', delayMs: 0, error: 'again' }],
    })
    // A retrying head keeps its place: it is claimed again, not the message behind it.
    const retried = await claimOrdered()
    expect(retried.map((r) => r.id)).toEqual([headA.id])
    await backend.settle({
      table: outbox.table,
      keepDelivered: false,
      settlements: [{ id: headA.id, attempts: 2, outcome: 'delivered' }],
    })
    const next = await claimOrdered()
    expect(next.map((r) => [r.key, JSON.parse(r.payload)])).toEqual([['a', 2]])
  })

  test('a dead head blocks its key (listed by listBlockedKeys) unless its topic continues', async () => {
    db.transaction(() => {
      void publishMany(ordered, db, [
        { topic: 'o', key: 'k1', payload: 1 },
        { topic: 'o', key: 'k1', payload: 2 },
        { topic: 'oc', key: 'k2', payload: 1 },
        { topic: 'oc', key: 'k2', payload: 2 },
      ])
    })()
    const heads = await claimOrdered()
    expect(heads).toHaveLength(2)
    await backend.settle({
      table: outbox.table,
      keepDelivered: false,
      settlements: heads.map((h) => ({ id: h.id, attempts: 1, outcome: 'dead' as const, error: 'bad' })),
    })
    const after = await claimOrdered()
    expect(after.map((r) => [r.key, JSON.parse(r.payload)])).toEqual([['k2', 2]])
    const blocked = await listBlockedKeys(ordered, backend)
    expect(blocked.map((b) => [b.key, b.waiting, b.reason, b.head.lastError])).toEqual([
      ['k1', 1, 'dead', 'bad'],
    ])
    const k1Head = heads.find((h) => h.key === 'k1')!
    await redrive(ordered, backend, { ids: [k1Head.id] })
    expect((await claimOrdered()).map((r) => r.id)).toEqual([k1Head.id])
  })
})

describe('admin and ownership', () => {
  test('stats, listDead (paged), discard, purge and redrive', async () => {
    insert(2)
    const dead = insert(3, { state: 'dead', attempts: 10, topic: 'x' })
    insert(1, { state: 'delivered' })
    const stats = await outboxStats(outbox, backend)
    expect(stats.topics.find((t) => t.topic === 't')).toMatchObject({ pending: 2 })
    expect(stats.topics.find((t) => t.topic === 'x')).toMatchObject({ dead: 3 })
    expect(stats.oldestDueLagMs).toBeGreaterThanOrEqual(900)
    const page1 = await listDead(outbox, backend, { limit: 2 })
    expect(page1).toHaveLength(2)
    const page2 = await listDead(outbox, backend, { limit: 2, after: page1[1] })
    expect(page2).toHaveLength(1)
    expect([...page1, ...page2].map((d) => d.id).sort()).toEqual([...dead].sort())
    expect(await discard(outbox, backend, { ids: [dead[0]!] })).toBe(1)
    expect(await backend.redrive({ table: outbox.table, topics: ['x'] })).toBe(2)
    expect(row(dead[1]!)).toMatchObject({ state: 'pending', attempts: 0 })
    expect(await backend.purge({ table: outbox.table, states: ['delivered'], olderThanMs: 3_600_000 })).toBe(
      0,
    )
    expect(await backend.purge({ table: outbox.table, states: ['delivered'], olderThanMs: 0 })).toBe(1)
  })

  test('migrate is idempotent and creates the claim and dedup indexes', async () => {
    await migrate(outbox, backend)
    await Promise.all([migrate(outbox, backend), migrate(outbox, ownBackend())])
    const indexes = db
      .prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`)
      .all(table) as {
      name: string
      sql: string | null
    }[]
    const sql = indexes.map((i) => i.sql ?? '').join('\n')
    expect(sql).toMatch(/\(available_at, id\) WHERE state IN \('pending', 'processing'\)/)
    expect(sql).toMatch(/UNIQUE INDEX .* \(dedup_key\) WHERE dedup_key IS NOT NULL/)
    expect(sql).toMatch(/\(key, seq\) WHERE seq IS NOT NULL/)
  })

  test("close() leaves the user's Database open; an owned connection is closed and reopened on use", async () => {
    const mine = sqliteBackend(db)
    await mine.close()
    expect(db.open).toBe(true)
    const own = ownBackend()
    insert(1)
    expect(await own.claim(claimRequest(1))).toHaveLength(1)
    await own.close()
    insert(1)
    expect(await own.claim(claimRequest(1))).toHaveLength(1) // reopened
    await own.close()
  })

  test('invalid arguments are refused with INVALID_CONFIG', () => {
    for (const bad of [
      undefined,
      'app.db',
      {},
      { filename: ':memory:' },
      { filename: '' },
      { filename: 'file::memory:?cache=shared' },
      { filename: temp.file, busyTimeoutMs: -1 },
      { filename: temp.file, readonly: true },
    ]) {
      expect(() => sqliteBackend(bad as never), JSON.stringify(bad)).toThrow(
        expect.objectContaining({
          code: 'INVALID_CONFIG',
          message: expect.stringContaining('[outboxkit] [sqlite]'),
        }),
      )
    }
    const closed = temp.open()
    closed.close()
    expect(() => sqliteBackend(closed)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
  })

  test('an unknown option, or options given with a Database, are refused naming what was meant', async () => {
    const refusal = (fn: () => unknown) => invalidConfigMessage('sqlite', fn)
    const typo = refusal(() => sqliteBackend({ filename: temp.file, busyTimeout: 100 } as never))
    expect(typo).toContain('unknown option "busyTimeout" for sqliteBackend({ filename })')
    expect(typo).toContain('(did you mean "busyTimeoutMs"?)')
    // better-sqlite3's own `timeout` is busyTimeoutMs here.
    expect(refusal(() => sqliteBackend({ filename: temp.file, timeout: 100 } as never))).toContain(
      'unknown option "timeout" for sqliteBackend({ filename }) (did you mean "busyTimeoutMs"?)',
    )
    expect(refusal(() => sqliteBackend({ filename: temp.file, Wal: false } as never))).toContain(
      '(did you mean "wal"?)',
    )
    const second = refusal(() =>
      (sqliteBackend as (...args: unknown[]) => unknown)(db, { busyTimeoutMs: 100 }),
    )
    expect(second).toContain('sqliteBackend takes one argument')
    // better-sqlite3's options and outboxkit's own pass.
    await sqliteBackend({ filename: temp.file, busyTimeoutMs: 100, wal: true, fileMustExist: true }).close()
  })
})
