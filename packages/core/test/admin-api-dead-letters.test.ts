// Dead-letter administration (listDead, discard, outboxStats), run on every database of the
// matrix (DIALECTS).
import { DIALECTS } from '@outboxkit/conformance'
import {
  type DeadMessage,
  discard,
  isOutboxError,
  listBlockedKeys,
  listDead,
  type Outbox,
  type OutboxBackend,
  outboxStats,
  purge,
  redrive,
} from '@outboxkit/core'
import { describe, expect, test } from 'vitest'
import { deferred, nextEvent, useHarness } from './support/harness.js'

describe.each(DIALECTS)('%s', (dialect) => {
  const h = useHarness(dialect)

  interface Spec {
    state: 'pending' | 'processing' | 'delivered' | 'dead'
    topic?: string
    key?: string
    /** available_at relative to now, in ms (negative: in the past). */
    atMs?: number
    /** created_at relative to now, in ms. */
    createdMs?: number
    attempts?: number
  }

  /** Inserts rows by raw SQL; returns their ids by label. */
  async function seed(outbox: Outbox<any>, specs: Record<string, Spec>): Promise<Record<string, string>> {
    const ids: Record<string, string> = {}
    for (const [label, s] of Object.entries(specs)) {
      const [id] = await h.insert(outbox, [
        {
          topic: s.topic ?? 'a',
          key: s.key ?? null,
          payload: { label },
          state: s.state,
          attempts: s.attempts ?? (s.state === 'pending' ? 0 : 3),
          availableInMs: s.atMs ?? 0,
          createdInMs: s.createdMs ?? s.atMs ?? 0,
          lastError: s.state === 'dead' ? `error of ${label}` : null,
        },
      ])
      ids[label] = id!
    }
    return ids
  }

  const labelOf = (m: DeadMessage) => (m.payload as { label: string }).label
  const states = async (outbox: Outbox<any>) =>
    Object.fromEntries((await h.rows(outbox)).map((r) => [(r.payload as { label: string }).label, r.state]))

  describe('dead-letter administration', () => {
    test('listDead: newest death first with last_error and attempts, paged without gaps or repeats', async () => {
      const outbox = await h.outbox('adm_list')
      const backend = h.backend()
      const ids = await seed(outbox, {
        d1: { state: 'dead', atMs: -50_000 },
        d2: { state: 'dead', atMs: -40_000, topic: 'b' },
        d3: { state: 'dead', atMs: -30_000, topic: 'b' },
        d4: { state: 'dead', atMs: -30_000 },
        d5: { state: 'dead', atMs: -10_000, topic: 'b' },
        pending: { state: 'pending', atMs: -60_000 },
        delivered: { state: 'delivered', atMs: -60_000 },
      })
      // d3 and d4 died at the same microsecond, and the page boundary falls between them.
      await h.update(outbox, ids.d4!, { availableAtOf: ids.d3! })
      const all = await listDead(outbox, backend)
      expect(all.map(labelOf).slice(0, 1)).toEqual(['d5'])
      expect(all.map(labelOf).sort()).toEqual(['d1', 'd2', 'd3', 'd4', 'd5'])
      expect(all[0]).toMatchObject({
        topic: 'b',
        attempts: 3,
        lastError: 'error of d5',
        key: null,
        headers: {},
      })
      expect(all[0]!.deadAt.getTime()).toBeGreaterThan(all[1]!.deadAt.getTime())
      expect(all[0]!.createdAt).toBeInstanceOf(Date)

      expect((await listDead(outbox, backend, { topics: ['a'] })).map(labelOf)).toEqual(['d4', 'd1'])

      const seen: string[] = []
      let page = await listDead(outbox, backend, { limit: 2 })
      while (page.length > 0) {
        seen.push(...page.map(labelOf))
        // Redriving what was just listed does not shift the later pages.
        await redrive(outbox, backend, { ids: [page[0]!.id] })
        page = await listDead(outbox, backend, { limit: 2, after: page.at(-1)! })
      }
      expect(seen).toEqual(all.map(labelOf))
    })

    test('discard deletes dead rows by ids, by topics or all, and nothing else', async () => {
      const outbox = await h.outbox('adm_discard')
      const backend = h.backend()
      const ids = await seed(outbox, {
        a1: { state: 'dead', topic: 'a' },
        a2: { state: 'dead', topic: 'a' },
        b1: { state: 'dead', topic: 'b' },
        c1: { state: 'dead', topic: 'c' },
        pending: { state: 'pending', topic: 'a' },
        processing: { state: 'processing', topic: 'a', atMs: 60_000 },
        delivered: { state: 'delivered', topic: 'a' },
      })
      expect(await discard(outbox, backend, { ids: [ids.a1!, ids.pending!, ids.processing!] })).toBe(1)
      expect(await discard(outbox, backend, { topics: ['b'] })).toBe(1)
      expect(await discard(outbox, backend, { ids: [ids.b1!] })).toBe(0)
      expect(await states(outbox)).toEqual({
        a2: 'dead',
        c1: 'dead',
        pending: 'pending',
        processing: 'processing',
        delivered: 'delivered',
      })
      expect(await discard(outbox, backend)).toBe(2)
      expect(Object.keys(await states(outbox)).sort()).toEqual(['delivered', 'pending', 'processing'])
    })

    test('outboxStats: counts by state and topic, and the lag of the oldest due message', async () => {
      const outbox = await h.outbox('adm_stats')
      const backend = h.backend()
      await seed(outbox, {
        due: { state: 'pending', topic: 'a', atMs: -5_000, createdMs: -20_000 },
        dueToo: { state: 'pending', topic: 'b', atMs: -1_000 },
        delayed: { state: 'pending', topic: 'a', atMs: 60_000, createdMs: -90_000 },
        running: { state: 'processing', topic: 'a', atMs: 30_000 },
        lapsed: { state: 'processing', topic: 'b', atMs: -2_000 },
        dead1: { state: 'dead', topic: 'a' },
        dead2: { state: 'dead', topic: 'b' },
        done: { state: 'delivered', topic: 'a' },
      })
      const stats = await outboxStats(outbox, backend)
      expect(stats.states).toEqual({ pending: 3, processing: 2, dead: 2, delivered: null })
      expect(stats.dead).toBe(2)
      // The lag counts only due messages (not the delayed one), from when they became due.
      expect(stats.oldestDueLagMs).toBeGreaterThanOrEqual(4_900)
      expect(stats.oldestDueLagMs).toBeLessThan(15_000)
      expect(stats.oldestPendingAgeMs).toBeGreaterThanOrEqual(89_000)
      const byTopic = Object.fromEntries(stats.topics.map((t) => [t.topic, t]))
      expect(byTopic.a).toMatchObject({ pending: 2, processing: 1, dead: 1 })
      expect(byTopic.b).toMatchObject({ pending: 1, processing: 1, dead: 1 })
      expect(byTopic.b!.oldestDueLagMs).toBeGreaterThanOrEqual(1_900)
      expect((await outboxStats(outbox, backend, { includeDelivered: true })).states.delivered).toBe(1)
    })

    test('safe while relays run: redrive, discard and purge never touch a message being handled', async () => {
      const outbox = await h.outbox('adm_live')
      const backend = h.backend()
      await seed(outbox, { old1: { state: 'dead', topic: 'other' }, old2: { state: 'dead', topic: 'other' } })
      const release = deferred()
      const started = deferred()
      const relay = h.relay(outbox, {
        handlers: {
          t: async () => {
            started.resolve()
            await release.promise
          },
        },
        pollIntervalMs: 50,
        notify: false,
      })
      const [p] = await h.publish(outbox, [{ topic: 't', payload: { label: 'live' } }])
      await relay.start()
      await started.promise
      expect(await redrive(outbox, backend, { topics: ['other'] })).toBe(2)
      expect(await discard(outbox, backend)).toBe(0)
      expect(await purge(outbox, backend)).toBe(0)
      expect(await discard(outbox, backend, { ids: [p!.id] })).toBe(0)
      expect((await h.row(outbox, p!.id))?.state).toBe('processing')
      const delivered = nextEvent(relay, 'delivered')
      release.resolve()
      expect((await delivered).settled).toBe(true)
    })

    test('the admin functions refuse bad options and backends without the operation', async () => {
      const outbox = await h.outbox('adm_bad', { migrate: false })
      const backend = h.backend()
      const partial = {
        ...backend,
        listDead: undefined,
        discard: undefined,
        blockedKeys: undefined,
      } as OutboxBackend
      const cases: [string, () => Promise<unknown>][] = [
        ['listDead limit 0', () => listDead(outbox, backend, { limit: 0 })],
        ['listDead after junk', () => listDead(outbox, backend, { after: { id: 'x', deadAt: new Date() } })],
        ['discard ids not uuids', () => discard(outbox, backend, { ids: ['nope'] })],
        ['discard topics not an array', () => discard(outbox, backend, { topics: 'a' as never })],
        ['listBlockedKeys limit', () => listBlockedKeys(outbox, backend, { limit: 10_001 })],
        ['no listDead', () => listDead(outbox, partial)],
        ['no discard', () => discard(outbox, partial)],
        ['no blockedKeys', () => listBlockedKeys(outbox, partial)],
      ]
      for (const [what, call] of cases) {
        const err = await call().catch((e: unknown) => e)
        expect(isOutboxError(err, 'INVALID_CONFIG'), `${what}: ${String(err)}`).toBe(true)
      }
    })
  })
})
