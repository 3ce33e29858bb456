// purge, redrive and keepDelivered, run on every database of the matrix (DIALECTS).
import { DIALECTS, type SeedState } from '@outboxkit/conformance'
import { isOutboxError, type Outbox, purge, redrive } from '@outboxkit/core'
import { describe, expect, test } from 'vitest'
import { nextEvent, useHarness } from './support/harness.js'

describe.each(DIALECTS)('%s', (dialect) => {
  const h = useHarness(dialect)

  /** Inserts one row per spec by raw SQL; returns ids by label. */
  async function seed(
    outbox: Outbox<any>,
    specs: Record<string, { state: SeedState; topic?: string; attempts?: number; agoMs?: number }>,
  ): Promise<Record<string, string>> {
    const ids: Record<string, string> = {}
    for (const [label, s] of Object.entries(specs)) {
      const [id] = await h.insert(outbox, [
        {
          topic: s.topic ?? 'a',
          payload: { label },
          state: s.state,
          attempts: s.attempts ?? 1,
          availableInMs: -(s.agoMs ?? 0),
          lastError: s.state === 'dead' ? 'gave up' : null,
        },
      ])
      ids[label] = id!
    }
    return ids
  }

  const labels = async (outbox: Outbox<any>) =>
    (await h.rows(outbox)).map((r) => `${(r.payload as { label: string }).label}:${r.state}`).sort()

  describe('purge', () => {
    test('deletes only the terminal states asked for, and only rows older than olderThanMs', async () => {
      const outbox = await h.outbox('purge')
      const backend = h.backend()
      await seed(outbox, {
        deadOld: { state: 'dead', agoMs: 3_600_000 },
        deadNew: { state: 'dead' },
        deliveredOld: { state: 'delivered', agoMs: 3_600_000 },
        deliveredNew: { state: 'delivered' },
        pending: { state: 'pending', attempts: 0, agoMs: 3_600_000 },
        processing: { state: 'processing', agoMs: 3_600_000 },
      })
      expect(await purge(outbox, backend, { states: ['dead'], olderThanMs: 60_000 })).toBe(1)
      expect(await labels(outbox)).toEqual(
        [
          'deadNew:dead',
          'deliveredNew:delivered',
          'deliveredOld:delivered',
          'pending:pending',
          'processing:processing',
        ].sort(),
      )
      expect(await purge(outbox, backend, { states: ['delivered'] })).toBe(2)
      expect(await purge(outbox, backend)).toBe(1)
      expect(await purge(outbox, backend)).toBe(0)
      expect(await labels(outbox)).toEqual(['pending:pending', 'processing:processing'])
    })

    test('refuses invalid options with INVALID_CONFIG', async () => {
      const outbox = await h.outbox('purge_bad', { migrate: false })
      const backend = h.backend()
      for (const options of [{ states: ['pending'] }, { olderThanMs: -1 }, { olderThanMs: Number.NaN }]) {
        const err = await purge(outbox, backend, options as never).catch((e: unknown) => e)
        expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
      }
    })
  })

  describe('redrive', () => {
    test('moves dead rows (by topic, by id, or all) back to pending with attempts 0, due now', async () => {
      const outbox = await h.outbox('redrive')
      const backend = h.backend()
      const ids = await seed(outbox, {
        deadA: { state: 'dead', topic: 'a', attempts: 10 },
        deadB1: { state: 'dead', topic: 'b', attempts: 10 },
        deadB2: { state: 'dead', topic: 'b', attempts: 10 },
        delivered: { state: 'delivered', topic: 'a' },
        processing: { state: 'processing', topic: 'a', attempts: 3 },
      })
      expect(await redrive(outbox, backend, { topics: ['a'] })).toBe(1)
      const a = await h.row(outbox, ids.deadA!)
      expect(a).toMatchObject({ state: 'pending', attempts: 0 })
      expect(a!.due_in_ms).toBeLessThanOrEqual(0)
      expect(await redrive(outbox, backend, { ids: [ids.deadB1!] })).toBe(1)
      expect(await h.row(outbox, ids.deadB2!)).toMatchObject({ state: 'dead', attempts: 10 })
      expect(await redrive(outbox, backend)).toBe(1)
      expect(await redrive(outbox, backend)).toBe(0)
      expect(await labels(outbox)).toEqual(
        [
          'deadA:pending',
          'deadB1:pending',
          'deadB2:pending',
          'delivered:delivered',
          'processing:processing',
        ].sort(),
      )
      expect(await h.row(outbox, ids.processing!)).toMatchObject({ state: 'processing', attempts: 3 })
      const err = await redrive(outbox, backend, { ids: ['not-a-uuid'] }).catch((e: unknown) => e)
      expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
    })

    test('a redriven message is delivered again by the relay, from attempt 1', async () => {
      const outbox = await h.outbox('redrive_relay')
      const backend = h.backend()
      const ids = await seed(outbox, { dead: { state: 'dead', topic: 't', attempts: 3 } })
      const relay = h.relay(outbox, { handlers: { t: () => {} }, pollIntervalMs: 100, notify: false })
      await relay.start()
      await nextEvent(relay, 'claimed')
      expect(relay.stats.claimed).toBe(0)
      const delivered = nextEvent(relay, 'delivered')
      expect(await redrive(outbox, backend, { ids: [ids.dead!] })).toBe(1)
      expect((await delivered).message).toMatchObject({ id: ids.dead, attempts: 1 })
      expect(await h.row(outbox, ids.dead!)).toBeUndefined()
    })
  })

  describe('keepDelivered', () => {
    test('true keeps delivered rows with state delivered (purge removes them); false deletes them', async () => {
      const outbox = await h.outbox('keep')
      for (const keepDelivered of [true, false]) {
        const relay = h.relay(outbox, { handlers: { t: () => {} }, keepDelivered, notify: false })
        const delivered = nextEvent(relay, 'delivered')
        const [p] = await h.publish(outbox, [{ topic: 't', payload: { keepDelivered } }])
        await relay.start()
        expect((await delivered).settled).toBe(true)
        if (keepDelivered) {
          expect(await h.row(outbox, p!.id)).toMatchObject({
            state: 'delivered',
            attempts: 1,
            last_error: null,
          })
          expect(await purge(outbox, h.backend(), { states: ['delivered'] })).toBe(1)
        }
        expect(await h.row(outbox, p!.id)).toBeUndefined()
        await relay.stop()
      }
    })
  })
})
