// Searching the dead letters (listDead's `search`) and counting them with a cap (countDead), on
// every database of the matrix (DIALECTS).
import { DIALECTS } from '@outboxkit/conformance'
import { countDead, type DeadMessage, isOutboxError, listDead, type Outbox } from '@outboxkit/core'
import { describe, expect, test } from 'vitest'
import { useHarness } from './support/harness.js'

describe.each(DIALECTS)('%s', (dialect) => {
  const h = useHarness(dialect)
  const labelOf = (m: DeadMessage) => (m.payload as { label: string }).label

  async function seed(outbox: Outbox<any>): Promise<Record<string, string>> {
    const specs: Record<
      string,
      { topic: string; key: string | null; state: 'dead' | 'delivered' | 'pending'; error: string | null }
    > = {
      timeout1: { topic: 'order.created', key: 'order-1', state: 'dead', error: 'Upstream TIMEOUT after 5s' },
      timeout2: { topic: 'order.paid', key: 'order-2', state: 'dead', error: 'socket timeout' },
      refused: { topic: 'order.paid', key: 'order-3', state: 'dead', error: 'connection refused' },
      keyed: { topic: 'mail.sent', key: 'timeout', state: 'dead', error: 'bad address' },
      // Not dead: never listed nor counted, whatever they match.
      delivered: { topic: 'order.paid', key: 'order-2', state: 'delivered', error: 'timeout' },
      pending: { topic: 'order.paid', key: 'order-2', state: 'pending', error: 'timeout' },
    }
    const ids: Record<string, string> = {}
    for (const [label, s] of Object.entries(specs)) {
      const [id] = await h.insert(outbox, [
        {
          topic: s.topic,
          key: s.key,
          payload: { label },
          state: s.state,
          attempts: 3,
          availableInMs: -1000,
          lastError: s.error,
        },
      ])
      ids[label] = id!
    }
    return ids
  }

  test('search finds by id, by exact key or topic, and by a part of the error; countDead agrees', async () => {
    const outbox = await h.outbox('adm_search')
    const backend = h.backend()
    const ids = await seed(outbox)
    const found = async (search: string) => (await listDead(outbox, backend, { search })).map(labelOf).sort()
    expect(await found(ids.refused!)).toEqual(['refused'])
    expect(await found(ids.refused!.toUpperCase())).toEqual(['refused'])
    expect(await found('order-2')).toEqual(['timeout2'])
    expect(await found('order')).toEqual([])
    expect(await found('order.paid')).toEqual(['refused', 'timeout2'])
    expect(await found('timeout')).toEqual(['keyed', 'timeout1', 'timeout2'])
    expect(await found('upstream timeout')).toEqual(['timeout1'])
    expect(await found('no such text')).toEqual([])
    const paid = await listDead(outbox, backend, { search: 'timeout', topics: ['order.paid'] })
    expect(paid.map(labelOf)).toEqual(['timeout2'])
    expect(await countDead(outbox, backend)).toBe(4)
    expect(await countDead(outbox, backend, { search: 'timeout' })).toBe(3)
    expect(await countDead(outbox, backend, { search: 'timeout', cap: 2 })).toBe(2)
    expect(await countDead(outbox, backend, { search: 'order-2', topics: ['mail.sent'] })).toBe(0)
  })

  test('search and cap are checked before any statement', async () => {
    const outbox = await h.outbox('adm_search_bad')
    const backend = h.backend()
    for (const bad of ['', 42, 'x'.repeat(1025)]) {
      const error = await listDead(outbox, backend, { search: bad as string }).catch((e: unknown) => e)
      expect(isOutboxError(error) && error.code === 'INVALID_CONFIG').toBe(true)
    }
    for (const cap of [0, 1.5, 2_000_000]) {
      const error = await countDead(outbox, backend, { cap }).catch((e: unknown) => e)
      expect(isOutboxError(error) && error.code === 'INVALID_CONFIG').toBe(true)
      expect(String((error as Error).message)).toContain('countDead cap')
    }
  })
})
