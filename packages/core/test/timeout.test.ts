import { failure, testDatabaseUrl, usePausableProxy, waitFor } from '@outboxkit/conformance'
import { isOutboxError, OutboxError } from '@outboxkit/core'
import { pgBackend, publish } from '@outboxkit/pg'
import pg from 'pg'
import { describe, expect, test } from 'vitest'
import { nextEvent, useHarness } from './support/harness.js'

const h = useHarness()
// Registered after the harness: resumed before the harness stops what runs through it.
const proxy = usePausableProxy(testDatabaseUrl(), 5432)

describe('command timeout through a frozen network', () => {
  test('a claim through the paused proxy fails with TIMEOUT within the bound (open and new connections)', async () => {
    const outbox = await h.outbox('timeout_claim')
    const request = { table: outbox.table, topics: ['t'], limit: 10, leaseMs: 30_000, maxAttempts: 10 }
    const warm = h.backend({ connectionString: proxy.url, commandTimeoutMs: 500 })
    expect(await warm.claim(request)).toEqual([]) // a pooled connection is now open through the proxy
    proxy.pause()
    for (const backend of [warm, h.backend({ connectionString: proxy.url, commandTimeoutMs: 500 })]) {
      const { error, ms } = await failure(() => backend.claim(request))
      expect(error).toBeInstanceOf(OutboxError)
      expect((error as OutboxError).code).toBe('TIMEOUT')
      expect((error as OutboxError).source).toBe('pg')
      expect(ms).toBeLessThan(3_000)
    }
  })

  test('the relay reports TIMEOUT errors, keeps running, and delivers on its own after the network returns', async () => {
    const outbox = await h.outbox('timeout_relay')
    const relay = h.relay(outbox, {
      backend: h.backend({ connectionString: proxy.url, commandTimeoutMs: 500 }),
      handlers: { t: () => {} },
      pollIntervalMs: 100,
      leaseMs: 2_000,
      notify: false,
    })
    const firstClaim = nextEvent(relay, 'claimed')
    await relay.start()
    await firstClaim
    const errors: unknown[] = []
    relay.on('error', (e) => e.during === 'claim' && errors.push(e.error))
    proxy.pause()
    await waitFor(() => errors.length >= 2, { timeoutMs: 10_000, what: 'two claim timeouts' })
    expect(errors.every((e) => isOutboxError(e, 'TIMEOUT'))).toBe(true)
    expect(relay.running).toBe(true)

    const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }]) // straight to the server
    const delivered = nextEvent(relay, 'delivered', { timeoutMs: 15_000 })
    proxy.resume()
    expect((await delivered).message.id).toBe(p!.id)
    expect(await h.row(outbox, p!.id)).toBeUndefined()
  })

  test('publish on a pg client with query_timeout through the paused proxy fails with TIMEOUT', async () => {
    const outbox = await h.outbox('timeout_publish')
    const client = new pg.Client({ connectionString: proxy.url, query_timeout: 500 })
    client.on('error', () => {})
    await client.connect()
    try {
      await client.query('BEGIN')
      proxy.pause()
      const { error, ms } = await failure(() => publish(outbox, client, { topic: 't', payload: {} }))
      expect(isOutboxError(error, 'TIMEOUT')).toBe(true)
      expect((error as OutboxError).source).toBe('pg')
      expect(ms).toBeLessThan(3_000)
    } finally {
      await client.end().catch(() => {})
    }
    proxy.resume()
    expect(await h.rows(outbox)).toEqual([])
  })
})

test('pgBackend refuses an invalid commandTimeoutMs', () => {
  for (const commandTimeoutMs of [0, -1, Number.NaN, '500' as unknown as number]) {
    expect(() => pgBackend({ connectionString: testDatabaseUrl(), commandTimeoutMs })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    )
  }
})
