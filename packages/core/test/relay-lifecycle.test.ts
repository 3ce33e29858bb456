// Start, stop, drain and connection ownership, run on every database of the matrix (DIALECTS).
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DIALECTS, removeSqliteFile, TRANSPORT, waitFor } from '@outboxkit/conformance'
import { createRelay, type DeliveredMessage, migrate, type Outbox, type OutboxBackend } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import pg from 'pg'
import { describe, expect, test } from 'vitest'
import { deferred, type Harness, nextEvent, useHarness, wrapBackend } from './support/harness.js'

interface Run {
  message: DeliveredMessage
  signal: AbortSignal
  release: () => void
}

/** A relay on `backend` delivers one published message and is stopped. */
async function deliverOneAndStop(h: Harness, outbox: Outbox<any>, backend: OutboxBackend): Promise<void> {
  const relay = createRelay(outbox, { backend, handlers: { t: () => {} } })
  const delivered = nextEvent(relay, 'delivered')
  await h.publish(outbox, [{ topic: 't', payload: {} }])
  await relay.start()
  await delivered
  await relay.stop()
}

describe.each(DIALECTS)('%s', (dialect) => {
  const h = useHarness(dialect)

  /** Handlers that report each run and wait until the test releases them. */
  function heldHandler() {
    const runs = new Map<string, Run>()
    const handler = (message: DeliveredMessage, { signal }: { signal: AbortSignal }) => {
      const gate = deferred()
      runs.set((message.payload as { name: string }).name, { message, signal, release: () => gate.resolve() })
      return gate.promise
    }
    return { runs, handler }
  }

  describe('drain and abort on stop', () => {
    test('stop({ graceMs }) waits for handlers that finish in the grace, aborts only the stragglers', async () => {
      const outbox = await h.outbox('drain')
      const { runs, handler } = heldHandler()
      const relay = h.relay(outbox, { handlers: { t: handler }, keepDelivered: true, notify: false })
      const [fast, slow] = await h.publish(outbox, [
        { topic: 't', payload: { name: 'fast' } },
        { topic: 't', payload: { name: 'slow' } },
      ])
      const started = relay.start()
      await started
      expect(relay.running).toBe(true)
      await waitFor(() => runs.size === 2, { what: 'both handlers to run' })

      const t0 = Date.now()
      let stopped = false
      const stopping = relay.stop({ graceMs: 1_000 }).then(() => (stopped = true))
      expect(relay.running).toBe(false)
      const delivered = nextEvent(relay, 'delivered')
      runs.get('fast')!.release()
      expect((await delivered).message.id).toBe(fast!.id)
      expect(stopped).toBe(false)
      expect(runs.get('slow')!.signal.aborted).toBe(false)
      await stopping
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1_000 - 20)

      expect(runs.get('fast')!.signal.aborted).toBe(false)
      expect(runs.get('slow')!.signal.aborted).toBe(true)
      expect(await h.row(outbox, fast!.id)).toMatchObject({ state: 'delivered', attempts: 1 })
      const straggler = await h.row(outbox, slow!.id)
      if (TRANSPORT === 'wal') {
        // A slot message has no lease: the stop gives it up as a failed attempt (docs/wal.md).
        expect(straggler).toMatchObject({ state: 'pending', attempts: 1 })
        expect(straggler!.last_error).toContain('the relay is stopping')
      } else {
        expect(straggler).toMatchObject({ state: 'processing', attempts: 1 })
        expect(straggler!.due_in_ms).toBeGreaterThan(20_000) // still under its 30 s lease
      }

      // Stopping again, and concurrently, is fine.
      await Promise.all([relay.stop(), relay.stop({ graceMs: 0 })])
      expect(relay.running).toBe(false)
    })

    test('stop resolves as soon as every handler finished, well before the grace', async () => {
      const outbox = await h.outbox('drain_fast')
      const { runs, handler } = heldHandler()
      const relay = h.relay(outbox, { handlers: { t: handler }, notify: false })
      const [p] = await h.publish(outbox, [{ topic: 't', payload: { name: 'only' } }])
      await relay.start()
      await waitFor(() => runs.size === 1, { what: 'the handler to run' })
      const t0 = Date.now()
      const stopping = relay.stop({ graceMs: 20_000 })
      runs.get('only')!.release()
      await stopping
      expect(Date.now() - t0).toBeLessThan(10_000)
      expect(runs.get('only')!.signal.aborted).toBe(false)
      expect(await h.row(outbox, p!.id)).toBeUndefined()
    })

    test('a handler that finished before the grace ended is not aborted while its settle is still being written', async () => {
      const outbox = await h.outbox('drain_settle')
      const { runs, handler } = heldHandler()
      const settleGate = deferred()
      const settleHeld = deferred()
      const { backend } = wrapBackend(h.backend(), {
        beforeSettle: async () => {
          settleHeld.resolve()
          await settleGate.promise
        },
      })
      const relay = h.relay(outbox, { backend, handlers: { t: handler }, notify: false })
      const [done, slow] = await h.publish(outbox, [
        { topic: 't', payload: { name: 'done' } },
        { topic: 't', payload: { name: 'slow' } },
      ])
      await relay.start()
      await waitFor(() => runs.size === 2, { what: 'both handlers to run' })
      runs.get('done')!.release()
      await settleHeld.promise // 'done' has finished; its settle is in flight

      const stopping = relay.stop({ graceMs: 200 })
      await waitFor(() => runs.get('slow')!.signal.aborted, {
        what: 'the straggler to be aborted at the end of the grace',
      })
      expect(runs.get('done')!.signal.aborted).toBe(false)
      settleGate.resolve()
      await stopping
      expect(await h.row(outbox, done!.id)).toBeUndefined()
      expect(await h.row(outbox, slow!.id)).toMatchObject({ state: 'processing', attempts: 1 })
    })
  })

  // Ownership is driver-specific: each dialect checks it with its own driver's objects.
  if (dialect === 'postgres') {
    describe('connection ownership (pg)', () => {
      test('a relay given { pool } leaves the pool usable after stop', async () => {
        const outbox = await h.outbox('own_pool')
        const pool = new pg.Pool({ connectionString: h.url, max: 3 })
        try {
          await deliverOneAndStop(h, outbox, pgBackend({ pool }))
          expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
          expect(pool.ended).toBe(false)
        } finally {
          await pool.end()
        }
      })

      test('a connection-string backend closes its own connections (pool and LISTEN) on stop', async () => {
        const outbox = await h.outbox('own_url')
        const app = `okt_own_${process.pid}_${Date.now()}`
        const sessions = async () =>
          (
            await h.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1`,
              [app],
            )
          )[0]!.n
        const relay = createRelay(outbox, {
          backend: pgBackend({ connectionString: h.url, application_name: app }),
          handlers: { t: () => {} },
        })
        const delivered = nextEvent(relay, 'delivered')
        await relay.start()
        await h.publish(outbox, [{ topic: 't', payload: {} }])
        await delivered
        expect(await sessions()).toBeGreaterThanOrEqual(2) // a pooled connection plus the LISTEN one
        await relay.stop()
        await waitFor(async () => (await sessions()) === 0, {
          timeoutMs: 5_000,
          what: 'the backend connections to close',
        })
      })
    })
  }

  if (dialect === 'mysql') {
    describe('connection ownership (mysql2)', () => {
      test('a relay given { pool } leaves the pool usable after stop', async () => {
        const outbox = await h.outbox('own_pool')
        const { default: mysql } = await import('mysql2/promise')
        const { mysqlBackend } = await import('@outboxkit/mysql')
        const pool = mysql.createPool({ uri: h.url, connectionLimit: 3 })
        try {
          await deliverOneAndStop(h, outbox, mysqlBackend({ pool }))
          const [rows] = await pool.query('SELECT 1 AS one')
          expect(rows).toEqual([{ one: 1 }])
        } finally {
          await pool.end()
        }
      })

      test('a { uri } backend closes its own connections on stop', async () => {
        const outbox = await h.outbox('own_url')
        const { mysqlBackend } = await import('@outboxkit/mysql')
        // A user of its own, so the server's process list shows exactly this backend's sessions.
        const user = `okt_own_${process.pid}`
        const [database] = await h.query<{ db: string }>('SELECT DATABASE() AS db')
        await h.query(`DROP USER IF EXISTS '${user}'@'%'`)
        await h.query(`CREATE USER '${user}'@'%'`)
        try {
          await h.query(`GRANT ALL PRIVILEGES ON \`${database!.db}\`.* TO '${user}'@'%'`)
          const uri = new URL(h.url)
          uri.username = user
          uri.password = ''
          const sessions = async () =>
            Number(
              (
                await h.query<{ n: number }>(
                  'SELECT count(*) AS n FROM information_schema.processlist WHERE user = ?',
                  [user],
                )
              )[0]!.n,
            )
          const relay = createRelay(outbox, {
            backend: mysqlBackend({ uri: uri.toString() }),
            handlers: { t: () => {} },
          })
          const delivered = nextEvent(relay, 'delivered')
          await relay.start()
          await h.publish(outbox, [{ topic: 't', payload: {} }])
          await delivered
          expect(await sessions()).toBeGreaterThanOrEqual(1)
          await relay.stop()
          await waitFor(async () => (await sessions()) === 0, {
            timeoutMs: 5_000,
            what: 'the backend connections to close',
          })
        } finally {
          await h.query(`DROP USER IF EXISTS '${user}'@'%'`)
        }
      })
    })
  }

  if (dialect === 'sqlite') {
    describe('connection ownership (better-sqlite3)', () => {
      test('a relay given a Database leaves it open and usable after stop', async () => {
        const outbox = await h.outbox('own_db')
        const { default: Database } = await import('better-sqlite3')
        const { sqliteBackend } = await import('@outboxkit/sqlite')
        const db = new Database(h.url)
        try {
          const relay = createRelay(outbox, { backend: sqliteBackend(db), handlers: { t: () => {} } })
          const delivered = nextEvent(relay, 'delivered')
          await h.publish(outbox, [{ topic: 't', payload: {} }])
          await relay.start()
          await delivered
          await relay.stop()
          expect(db.open).toBe(true)
          expect(db.prepare('SELECT 1 AS one').get()).toEqual({ one: 1 })
        } finally {
          db.close()
        }
      })

      test('a { filename } backend closes its own connection on stop (the WAL file goes with the last one)', async () => {
        const { default: Database } = await import('better-sqlite3')
        const { publish, sqliteBackend } = await import('@outboxkit/sqlite')
        // A database file of its own, so that the backend's is the only connection to it.
        const file = join(tmpdir(), `outboxkit-own-${process.pid}-${Date.now()}.db`)
        const outbox = await h.outbox('own_file', { migrate: false })
        try {
          const setup = new Database(file)
          setup.pragma('journal_mode = WAL')
          await migrate(outbox, sqliteBackend(setup))
          let published: Promise<unknown> | undefined
          setup.transaction(() => {
            published = publish(outbox, setup, { topic: 't', payload: {} })
          })()
          await published
          setup.close()
          expect(existsSync(`${file}-wal`)).toBe(false)

          const relay = createRelay(outbox, {
            backend: sqliteBackend({ filename: file }),
            handlers: { t: () => {} },
            notify: false,
            pollIntervalMs: 50,
          })
          const delivered = nextEvent(relay, 'delivered')
          await relay.start()
          await delivered
          expect(existsSync(`${file}-wal`)).toBe(true) // the backend's connection is open
          await relay.stop()
          expect(existsSync(`${file}-wal`)).toBe(false) // closed: SQLite removed the WAL with it
        } finally {
          removeSqliteFile(file)
        }
      })
    })
  }

  describe('start, restart and events', () => {
    test('start twice is a no-op; a stopped relay starts again on the same backend and delivers', async () => {
      const outbox = await h.outbox('restart')
      const relay = h.relay(outbox, { handlers: { t: () => {} }, pollIntervalMs: 100 })
      await Promise.all([relay.start(), relay.start()])
      expect(relay.running).toBe(true)
      const first = nextEvent(relay, 'delivered')
      await h.publish(outbox, [{ topic: 't', payload: { n: 1 } }])
      await first
      await relay.stop()
      expect(relay.running).toBe(false)

      const [p] = await h.publish(outbox, [{ topic: 't', payload: { n: 2 } }])
      const second = nextEvent(relay, 'delivered')
      await relay.start()
      expect((await second).message.id).toBe(p!.id)
      expect(relay.stats).toMatchObject({ delivered: 2, inFlight: 0 })
    })

    test('a listener that throws is reported as an error and does not stop delivery or other listeners', async () => {
      const outbox = await h.outbox('listener')
      const relay = h.relay(outbox, { handlers: { t: () => {} }, pollIntervalMs: 100 })
      const seen: string[] = []
      relay.on('delivered', () => {
        throw new Error('listener bug')
      })
      relay.on('delivered', (e) => seen.push(e.message.id))
      // A throwing 'error' listener must not recurse into another error.
      relay.on('error', () => {
        throw new Error('error listener bug')
      })
      const reported = nextEvent(relay, 'error', { where: (e) => e.during === 'listener' })
      const unsubscribe = relay.on('claimed', () => {})
      unsubscribe()
      const published = await h.publish(outbox, [
        { topic: 't', payload: {} },
        { topic: 't', payload: {} },
      ])
      await relay.start()
      expect(((await reported).error as Error).message).toBe('listener bug')
      await waitFor(() => seen.length === 2, { what: 'both deliveries' })
      expect(seen.sort()).toEqual(published.map((p) => p.id).sort())
      expect(await h.rows(outbox)).toEqual([])
    })
  })
})
