// @outboxkit/postgres-js through PgBouncer 1.18 in transaction mode with a pool of 3 server
// connections (the globalSetup starts it: scripts/ensure-pgbouncer.sh), on a `sql` with
// `prepare: false` as postgres.js requires there. commandTimeoutMs without a startup parameter
// (issue 12 item 1); LISTEN behind the pooler (item 2): the probe, the one listenUnavailable, and
// the `listen` option. The conformance suites also run through it (conformance.test.ts).
import {
  describeThroughPgBouncer,
  expectPollingWhenUnheard,
  expectProbeHeardOnlyDirectly,
  expectTimeoutBehindLock,
  expectWokenByDirectListen,
  testDatabaseUrl,
  uniqueTableName,
  useTestResources,
} from '@outboxkit/conformance'
import { type DeliveredMessage, defineOutbox, migrate, type Outbox, type Relay } from '@outboxkit/core'
import { postgresJsBackend, publish } from '@outboxkit/postgres-js'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { LISTEN_PROBE_PREFIX, listenOn } from '../src/listener.js'

const PRODUCERS = 12

describeThroughPgBouncer('@outboxkit/postgres-js', (pooledUrl) => {
  let direct: postgres.Sql
  let pooled: postgres.Sql
  const tables: string[] = []
  const resources = useTestResources()
  const { relay, backend: track } = resources

  beforeAll(() => {
    direct = postgres(testDatabaseUrl(), { max: 4, onnotice: () => {} })
    pooled = postgres(pooledUrl, { max: PRODUCERS + 4, prepare: false, onnotice: () => {} })
  })
  afterAll(async () => {
    for (const t of tables) await direct.unsafe(`DROP TABLE IF EXISTS "${t}"`).catch(() => {})
    await Promise.all([direct?.end(), pooled?.end()])
  })

  async function outboxOn(prefix: string): Promise<Outbox> {
    const table = uniqueTableName(`pjs_bouncer_${prefix}`)
    tables.push(table)
    const outbox = defineOutbox({ table })
    await migrate(outbox, track(postgresJsBackend(pooled)))
    return outbox
  }
  const count = async (outbox: Outbox) =>
    (await direct.unsafe(`SELECT count(*)::int AS n FROM "${outbox.table.name}"`))[0]!.n as number
  /** `PRODUCERS` producers, each committing `rounds` transactions through the pooler. */
  const produce = (outbox: Outbox, rounds: number) =>
    Promise.allSettled(
      Array.from({ length: PRODUCERS }, async (_, p) => {
        for (let r = 0; r < rounds; r++) {
          await pooled.begin(async (tx) => {
            await tx`SELECT 1`
            await publish(outbox, tx, { topic: 't', payload: { p, r } })
          })
        }
      }),
    )
  /** The relay checks' view of `outbox` through the pooler. */
  const pooledRelay = (outbox: Outbox, r: Relay) => ({
    outbox,
    relay: r,
    produce: (rounds: number) => produce(outbox, rounds),
    count: () => count(outbox),
  })
  const listening = async (channel: string) =>
    (
      await direct.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE lower(query) = $1`, [
        `listen "${channel}"`,
      ])
    )[0]!.n as number

  test('commandTimeoutMs: statements work, and a claim or migrate stuck behind a lock fails with TIMEOUT within the bound', async () => {
    const outbox = await outboxOn('timeout')
    await expectTimeoutBehindLock({
      outbox,
      backend: track(postgresJsBackend(pooled, { commandTimeoutMs: 500 })),
      seeded: PRODUCERS,
      seed: async () => expect((await produce(outbox, 1)).filter((r) => r.status === 'rejected')).toEqual([]),
      lockTable: async (name) => {
        const locker = await direct.reserve()
        const release = async () => {
          await locker`ROLLBACK`.catch(() => {})
          locker.release()
        }
        try {
          await locker`BEGIN`
          await locker.unsafe(`LOCK TABLE "${name}" IN ACCESS EXCLUSIVE MODE`)
        } catch (error) {
          await release()
          throw error
        }
        return release
      },
    })
  })

  describe('LISTEN behind the pooler', () => {
    test('a relay on the pooled sql delivers everything by polling and emits listenUnavailable once', async () => {
      const outbox = await outboxOn('poll')
      await produce(outbox, 3)
      const seen: DeliveredMessage[] = []
      const r = relay(outbox, {
        backend: track(postgresJsBackend(pooled, { commandTimeoutMs: 5_000, listenProbeTimeoutMs: 500 })),
        handlers: { t: (m) => void seen.push(m) },
        pollIntervalMs: 100,
      })
      await expectPollingWhenUnheard({
        ...pooledRelay(outbox, r),
        seen,
        more: 3,
        total: PRODUCERS * 6,
        advice: 'postgresJsBackend(sql, { listen: postgres(DIRECT_URL) })',
      })
    })

    test('with listen: a direct sql, a publish through the pooler wakes the relay long before a 30 s poll; nothing is reported', async () => {
      const outbox = await outboxOn('wake')
      const r = relay(outbox, {
        backend: track(postgresJsBackend(pooled, { listen: direct, listenProbeTimeoutMs: 1_000 })),
        handlers: { t: () => {} },
        pollIntervalMs: 30_000,
      })
      await expectWokenByDirectListen({ ...pooledRelay(outbox, r), listening })
    })

    test("the probe's payload wakes nobody; a publish's does; through the pooler the probe is not heard and onUnavailable is called once", async () => {
      const channel = `okt_pjs_probe_${process.pid}_${Date.now()}`
      await expectProbeHeardOnlyDirectly({
        urls: [testDatabaseUrl(), pooledUrl],
        probePrefix: LISTEN_PROBE_PREFIX,
        subscribe: async (url, handlers) => {
          const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} })
          resources.closer(() => sql.end())
          // Registered first on the same listen connection: it sees each notification before listenOn does.
          const payloads: string[] = []
          await sql.listen(channel, (p) => payloads.push(p))
          const sub = await listenOn(sql, channel, handlers, 5_000, {
            timeoutMs: 500,
            send: async (payload) => void (await pooled`SELECT pg_notify(${channel}, ${payload})`),
          })
          return { payloads, close: () => sub.close() }
        },
        notifyDirectly: () => direct`SELECT pg_notify(${channel}, '')`,
        unavailableReason: [/did not hear a probe NOTIFY on channel "okt_pjs_probe_\w+" within 500 ms/],
        closer: resources.closer,
      })
    })
  })
})
