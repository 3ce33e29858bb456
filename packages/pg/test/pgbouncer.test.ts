// @outboxkit/pg through PgBouncer 1.18 in transaction mode with a pool of 3 server connections,
// fewer than the producers (the globalSetup starts it: scripts/ensure-pgbouncer.sh). Nothing
// session-bound by default (issue 12 item 1): publish, the relay's statements, migrate, the
// ordered-topic publish and commandTimeoutMs; and LISTEN behind the pooler (item 2): the probe, the
// one listenUnavailable, and listenConnectionString. The conformance suites also run through it
// (conformance.test.ts); these are the checks they do not make, with their negative controls.
import {
  collect,
  describeThroughPgBouncer,
  expectPollingWhenUnheard,
  expectProbeHeardOnlyDirectly,
  expectTimeoutBehindLock,
  expectWokenByDirectListen,
  failure,
  inPgTransaction,
  observeFor,
  testDatabaseUrl,
  uniqueTableName,
  useTestResources,
  waitFor,
} from '@outboxkit/conformance'
import {
  type DeliveredMessage,
  defineOutbox,
  type Logger,
  migrate,
  type Outbox,
  type OutboxBackend,
  type PublishFn,
  type Relay,
} from '@outboxkit/core'
import { type PgTransactionClient, pgBackend, pgPublisher, publish } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { LISTEN_PROBE_PREFIX, listenWithReconnect } from '../src/listener.js'

const PRODUCERS = 12

describeThroughPgBouncer('@outboxkit/pg', (pooledUrl) => {
  let direct: pg.Pool
  let pooled: pg.Pool
  const tables: string[] = []
  const resources = useTestResources()
  const { relay } = resources

  beforeAll(() => {
    direct = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 })
    pooled = new pg.Pool({ connectionString: pooledUrl, max: PRODUCERS + 4 })
    for (const p of [direct, pooled]) p.on('error', () => {})
  })
  afterAll(async () => {
    for (const t of tables) await direct.query(`DROP TABLE IF EXISTS "${t}"`).catch(() => {})
    await Promise.all([direct?.end(), pooled?.end()])
  })

  const backend = (options: Parameters<typeof pgBackend>[0]): OutboxBackend =>
    resources.backend(pgBackend(options))
  /** A fresh outbox, migrated through the pooler (its DDL and advisory lock are transaction-scoped). */
  async function outboxOn(prefix: string, options: { orderedTopics?: string[] } = {}): Promise<Outbox> {
    const table = uniqueTableName(`pg_bouncer_${prefix}`)
    tables.push(table)
    const outbox = defineOutbox({ table, ...options })
    await migrate(outbox, backend({ connectionString: pooledUrl, max: 2 }))
    return outbox
  }
  const count = async (outbox: Outbox) =>
    (await direct.query(`SELECT count(*)::int AS n FROM "${outbox.table.name}"`)).rows[0].n as number
  /** `PRODUCERS` producers, each committing `rounds` transactions through the pooler (one message each). */
  const produce = (outbox: Outbox, rounds: number, pub: PublishFn<PgTransactionClient> = publish) =>
    Promise.allSettled(
      Array.from({ length: PRODUCERS }, async (_, p) => {
        for (let r = 0; r < rounds; r++) {
          await inPgTransaction(pooled, async (client) => {
            await client.query('SELECT 1')
            await pub(outbox, client, { topic: 't', key: `k${p % 3}`, payload: { p, r } })
          })
        }
      }),
    )
  /** Backends LISTENing on `channel`, seen directly. */
  const listening = async (channel: string) =>
    (
      await direct.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = $1`, [
        `LISTEN "${channel}"`,
      ])
    ).rows[0].n as number
  /** The relay checks' view of `outbox` through the pooler. */
  const pooledRelay = (outbox: Outbox, r: Relay) => ({
    outbox,
    relay: r,
    produce: (rounds: number) => produce(outbox, rounds),
    count: () => count(outbox),
  })
  /** A logger that keeps the warn lines. */
  const warnings = (): Logger & { lines: string[] } => {
    const lines: string[] = []
    const none = () => {}
    return { lines, debug: none, info: none, error: none, warn: (_fields, message) => lines.push(message) }
  }

  describe('nothing session-bound by default', () => {
    test(`${PRODUCERS} concurrent producers, 5 transactions each, through a pool of 3: every publish commits`, async () => {
      const outbox = await outboxOn('publish')
      const results = await produce(outbox, 5)
      expect(results.filter((r) => r.status === 'rejected')).toEqual([])
      expect(await count(outbox)).toBe(PRODUCERS * 5)
    })

    test('the control: named prepared statements (pgPublisher({ preparedStatements: true })) fail through it', async () => {
      // What publish did before, and what the pooled runs would catch if a named statement came back.
      const outbox = await outboxOn('named')
      const named = pgPublisher({ preparedStatements: true })
      const results = await produce(outbox, 5, named.publish)
      const failed = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []))
      expect(failed.length).toBeGreaterThan(0)
      expect(failed[0]).toMatch(/prepared statement "outboxkit_publish_\w+" (already exists|does not exist)/)
    })

    test('the control: a startup parameter (pg.Pool statement_timeout) is refused, which is why commandTimeoutMs sends none', async () => {
      const outbox = await outboxOn('startup')
      const refused = backend({ connectionString: pooledUrl, statement_timeout: 1_000 })
      const { error } = await failure(() =>
        refused.claim({ table: outbox.table, topics: ['t'], limit: 1, leaseMs: 1_000, maxAttempts: 3 }),
      )
      expect(String(error)).toMatch(/unsupported startup parameter/)
    })

    test('commandTimeoutMs: statements work, and a claim or migrate stuck behind a lock fails with TIMEOUT within the bound', async () => {
      const outbox = await outboxOn('timeout')
      await expectTimeoutBehindLock({
        outbox,
        backend: backend({ connectionString: pooledUrl, commandTimeoutMs: 500 }),
        seeded: PRODUCERS,
        seed: async () => void (await produce(outbox, 1)),
        lockTable: async (name) => {
          const locker = await direct.connect()
          const release = async () => {
            await locker.query('ROLLBACK').catch(() => {})
            locker.release()
          }
          try {
            await locker.query('BEGIN')
            await locker.query(`LOCK TABLE "${name}" IN ACCESS EXCLUSIVE MODE`)
          } catch (error) {
            await release()
            throw error
          }
          return release
        },
      })
    })

    test('ordered topics: concurrent producers on three keys, each numbered in commit order, delivered per key in seq order', async () => {
      const outbox = await outboxOn('ordered', { orderedTopics: ['t'] })
      const results = await produce(outbox, 3)
      expect(results.filter((r) => r.status === 'rejected')).toEqual([])
      const rows = (
        await direct.query(
          `SELECT id::text AS id, key, seq::int AS seq, (payload->>'p')::int AS p, (payload->>'r')::int AS r
           FROM "${outbox.table.name}" ORDER BY seq`,
        )
      ).rows as { id: string; key: string; seq: number; p: number; r: number }[]
      expect(new Set(rows.map((x) => x.seq)).size).toBe(PRODUCERS * 3)
      for (let p = 0; p < PRODUCERS; p++) {
        // A producer's transactions commit one after another: its rounds are numbered in order.
        expect(rows.filter((x) => x.p === p).map((x) => x.r)).toEqual([0, 1, 2])
      }

      const seen: DeliveredMessage[] = []
      const r = relay(outbox, {
        backend: backend({ connectionString: pooledUrl }),
        handlers: { t: (m) => void seen.push(m) },
        pollIntervalMs: 100,
      })
      await r.start()
      await waitFor(() => seen.length === PRODUCERS * 3, { timeoutMs: 20_000, what: 'every ordered message' })
      for (const key of ['k0', 'k1', 'k2']) {
        expect(seen.filter((m) => m.key === key).map((m) => m.id)).toEqual(
          rows.filter((x) => x.key === key).map((x) => x.id),
        )
      }
    })
  })

  describe('LISTEN behind the pooler', () => {
    test('a relay with no option set delivers everything by polling and says once (event and warn line) that LISTEN is unavailable', async () => {
      const outbox = await outboxOn('poll')
      await produce(outbox, 5)
      const log = warnings()
      const seen: DeliveredMessage[] = []
      const r = relay(outbox, {
        backend: backend({ connectionString: pooledUrl, commandTimeoutMs: 5_000, listenProbeTimeoutMs: 500 }),
        handlers: { t: (m) => void seen.push(m) },
        pollIntervalMs: 100,
        logger: log,
      })
      await expectPollingWhenUnheard({
        ...pooledRelay(outbox, r),
        seen,
        more: 5,
        total: PRODUCERS * 10,
        advice: 'pgBackend({ ..., listenConnectionString })',
      })
      expect(log.lines.filter((l) => l.includes('LISTEN is not available'))).toHaveLength(1)
    })

    test('with listenConnectionString (direct), a publish through the pooler wakes the relay long before a 30 s poll; nothing is reported', async () => {
      const outbox = await outboxOn('wake')
      const r = relay(outbox, {
        backend: backend({
          connectionString: pooledUrl,
          listenConnectionString: testDatabaseUrl(),
          listenProbeTimeoutMs: 1_000,
        }),
        handlers: { t: () => {} },
        pollIntervalMs: 30_000,
      })
      await expectWokenByDirectListen({ ...pooledRelay(outbox, r), listening })
    })

    test('directly (no pooler), the probe is heard and nothing is reported', async () => {
      const outbox = await outboxOn('direct')
      const r = relay(outbox, {
        backend: backend({ connectionString: testDatabaseUrl(), listenProbeTimeoutMs: 1_000 }),
        handlers: { t: () => {} },
        pollIntervalMs: 30_000,
      })
      const unavailable = collect(r, 'listenUnavailable')
      await r.start()
      await waitFor(async () => (await listening(outbox.channel)) === 1, { what: 'the LISTEN' })
      await observeFor(1_500)
      expect(unavailable).toEqual([])
    })

    test("the probe's payload wakes nobody; a publish's does; through the pooler the probe is not heard and onUnavailable is called once", async () => {
      const channel = `okt_probe_${process.pid}_${Date.now()}`
      await expectProbeHeardOnlyDirectly({
        urls: [testDatabaseUrl(), pooledUrl],
        probePrefix: LISTEN_PROBE_PREFIX,
        subscribe: async (url, handlers) => {
          const payloads: string[] = []
          const sub = await listenWithReconnect(
            async () => {
              const client = new pg.Client({ connectionString: url })
              client.on('error', () => {})
              // Registered before the listener's own handler: sees what it sees, first.
              client.on('notification', (n) => payloads.push(n.payload ?? ''))
              await client.connect()
              return client
            },
            channel,
            handlers,
            {
              timeoutMs: 500,
              send: async (payload) =>
                void (await pooled.query('SELECT pg_notify($1, $2)', [channel, payload])),
              advice: 'do what the test says',
            },
          )
          return { payloads, close: () => sub.close() }
        },
        notifyDirectly: () => direct.query(`SELECT pg_notify($1, '')`, [channel]),
        unavailableReason: [
          /did not hear a probe NOTIFY on channel "okt_probe_\w+" within 500 ms/,
          /do what the test says$/,
        ],
        closer: resources.closer,
      })
    })
  })
})
