// The dashboard's JSON API through its fetch handler, on every database of the matrix
// (PostgreSQL, MariaDB, SQLite files): counts, search, paging, and the write gate (read-only
// without authorize, same origin only, bounded bodies), each checked against the rows by raw SQL.
import { DIALECTS } from '@outboxkit/conformance'
import { createDashboard } from '@outboxkit/dashboard'
import { beforeAll, describe, expect, test } from 'vitest'
import { useDashboardDb } from './support/databases.js'

const ORIGIN = 'http://dash.test'

describe.each(DIALECTS)('%s', (dialect) => {
  const db = useDashboardDb(dialect, 'dash_api')
  const ids: Record<string, string> = {}

  beforeAll(async () => {
    const seed = async (label: string, row: Parameters<typeof db.sql.insert>[1][number]) => {
      const [id] = await db.sql.insert(db.outbox.table.name, [{ payload: { label }, ...row }])
      ids[label] = id!
    }
    for (let i = 0; i < 3; i++)
      await seed(`p${i}`, {
        topic: 'order.created',
        state: 'pending',
        availableInMs: -2000,
        createdInMs: -5000,
      })
    await seed('d1', {
      topic: 'order.created',
      key: 'order-41',
      state: 'dead',
      attempts: 5,
      lastError: 'HTTP 503 from billing',
      availableInMs: -3000,
    })
    await seed('d2', {
      topic: 'mail.send',
      key: 'user-7',
      state: 'dead',
      attempts: 2,
      lastError: 'Cancel: bad address',
      availableInMs: -2000,
    })
    await seed('d3', {
      topic: 'mail.send',
      key: 'user-8',
      state: 'dead',
      attempts: 2,
      lastError: 'HTTP 503 from smtp',
      availableInMs: -1000,
    })
    await seed('ok', { topic: 'mail.send', key: 'user-7', state: 'delivered', lastError: 'HTTP 503 earlier' })
  })

  const readOnly = () => createDashboard({ outbox: db.outbox, backend: db.backend, basePath: '/outbox' })
  const writable = () =>
    createDashboard({
      outbox: db.outbox,
      backend: db.backend,
      basePath: '/outbox',
      authorize: (r) => r.headers.get('x-admin') === 'yes',
    })
  const get = async (dashboard: ReturnType<typeof readOnly>, path: string) => {
    const response = await dashboard.fetch(new Request(`${ORIGIN}/outbox${path}`))
    return { status: response.status, body: (await response.json()) as any }
  }
  const post = (
    dashboard: ReturnType<typeof readOnly>,
    path: string,
    init: { body?: string; headers?: Record<string, string> } = {},
  ) =>
    dashboard.fetch(
      new Request(`${ORIGIN}/outbox${path}`, {
        method: 'POST',
        headers: { origin: ORIGIN, 'x-admin': 'yes', 'content-type': 'application/json', ...init.headers },
        body: init.body ?? '{}',
      }),
    )
  const stateOf = async (label: string) => (await db.sql.row(db.outbox.table.name, ids[label]!))?.state

  test('stats: counts per topic and state, the oldest age and the relay lag', async () => {
    const { status, body } = await get(readOnly(), '/api/stats')
    expect(status).toBe(200)
    expect(body.states).toEqual({ pending: 3, processing: 0, dead: 3, delivered: null })
    expect(body.topics.map((t: any) => [t.topic, t.pending, t.dead])).toEqual([
      ['mail.send', 0, 2],
      ['order.created', 3, 1],
    ])
    expect(body.oldestPendingAgeMs).toBeGreaterThanOrEqual(4000)
    expect(body.oldestDueLagMs).toBeGreaterThanOrEqual(1500)
    expect(body.writable).toBe(false)
  })

  test('dead: newest first with the fields the page shows; search by key, id, topic and error text', async () => {
    const all = await get(readOnly(), '/api/dead')
    expect(all.body.messages.map((m: any) => m.payload.label)).toEqual(['d3', 'd2', 'd1'])
    expect(all.body.matching).toBe(3)
    expect(all.body.messages[2]).toMatchObject({
      id: ids.d1,
      topic: 'order.created',
      key: 'order-41',
      attempts: 5,
      lastError: 'HTTP 503 from billing',
      traceId: null,
    })
    const labels = async (query: string) =>
      (await get(readOnly(), `/api/dead?${query}`)).body.messages.map((m: any) => m.payload.label)
    expect(await labels('q=user-7')).toEqual(['d2'])
    expect(await labels(`q=${ids.d1}`)).toEqual(['d1'])
    expect(await labels('q=http%20503')).toEqual(['d3', 'd1'])
    expect(await labels('topic=mail.send&q=503')).toEqual(['d3'])
    expect(await labels('topic=mail.send')).toEqual(['d3', 'd2'])
    expect((await get(readOnly(), '/api/dead?q=503')).body.matching).toBe(2)
  })

  test('dead: paged by cursor without gaps or repeats; bad parameters are 400', async () => {
    const first = await get(readOnly(), '/api/dead?limit=2')
    expect(first.body.messages).toHaveLength(2)
    expect(first.body.next).toBe(first.body.messages[1].cursor)
    const second = await get(readOnly(), `/api/dead?limit=2&after=${first.body.next}`)
    expect(second.body.messages.map((m: any) => m.payload.label)).toEqual(['d1'])
    expect(second.body.next).toBeNull()
    for (const bad of ['limit=0', 'limit=500', 'after=nope', `q=${'x'.repeat(1025)}`]) {
      const r = await get(readOnly(), `/api/dead?${bad}`)
      expect(r.status, bad).toBe(400)
      expect(r.body.error.message).toMatch(/^\[outboxkit\] \[dashboard\] /)
    }
  })

  test('read-only without authorize: every POST is 403 and changes nothing', async () => {
    for (const path of [
      `/api/dead/${ids.d1}/redrive`,
      `/api/dead/${ids.d1}/discard`,
      '/api/dead/redrive',
      '/api/dead/discard',
    ]) {
      const response = await post(readOnly(), path, { body: JSON.stringify({ expected: 3 }) })
      expect(response.status, path).toBe(403)
      expect(((await response.json()) as any).error.code).toBe('READ_ONLY')
    }
    expect(await db.sql.count(db.outbox.table.name, { state: 'dead' })).toBe(3)
  })

  test('a POST from another Origin, or that authorize refuses, is 403 and changes nothing', async () => {
    const foreign = await post(writable(), `/api/dead/${ids.d1}/redrive`, {
      headers: { origin: 'https://evil.example' },
    })
    expect(foreign.status).toBe(403)
    const crossSite = await post(writable(), `/api/dead/${ids.d1}/redrive`, {
      headers: { origin: ORIGIN, 'sec-fetch-site': 'cross-site' },
    })
    expect(crossSite.status).toBe(403)
    const notAdmin = await post(writable(), `/api/dead/${ids.d1}/discard`, { headers: { 'x-admin': 'no' } })
    expect(notAdmin.status).toBe(403)
    const huge = await post(writable(), '/api/dead/discard', {
      body: JSON.stringify({ q: 'x', pad: 'y'.repeat(5000) }),
    })
    expect(huge.status).toBe(413)
    expect(await stateOf('d1')).toBe('dead')
    expect(await db.sql.count(db.outbox.table.name, { state: 'dead' })).toBe(3)
  })

  test('redrive one: its row is pending with attempts 0; again it is 404', async () => {
    const response = await post(writable(), `/api/dead/${ids.d1}/redrive`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ id: ids.d1, redriven: 1 })
    const row = await db.sql.row(db.outbox.table.name, ids.d1!)
    expect(row).toMatchObject({ state: 'pending', attempts: 0 })
    expect((await post(writable(), `/api/dead/${ids.d1}/redrive`)).status).toBe(404)
    expect((await post(writable(), '/api/dead/not-an-id/redrive')).status).toBe(400)
  })

  test('bulk discard of a search result needs the confirmed count; it never touches other rows', async () => {
    const stale = await post(writable(), '/api/dead/discard', {
      body: JSON.stringify({ topic: 'mail.send', expected: 5 }),
    })
    expect(stale.status).toBe(409)
    expect(((await stale.json()) as any).matching).toBe(2)
    expect(await db.sql.count(db.outbox.table.name, { state: 'dead' })).toBe(2)
    const done = await post(writable(), '/api/dead/discard', {
      body: JSON.stringify({ topic: 'mail.send', q: 'user-7', expected: 1 }),
    })
    expect(await done.json()).toEqual({ matching: 1, discarded: 1 })
    expect(await stateOf('d2')).toBeUndefined()
    expect(await stateOf('d3')).toBe('dead')
    expect(await stateOf('ok')).toBe('delivered')
  })

  test('the page is HTML under a nonce CSP and holds no outbox data (the script fills it in as text)', async () => {
    const response = await writable().fetch(new Request(`${ORIGIN}/outbox`))
    expect(response.headers.get('content-type')).toMatch(/^text\/html/)
    const csp = response.headers.get('content-security-policy')!
    expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+'/)
    expect(csp).toContain("default-src 'none'")
    const html = await response.text()
    expect(html).not.toContain('order-41')
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/)
    expect(html.match(/<script nonce=/g)).toHaveLength(1)
    expect((await writable().fetch(new Request(`${ORIGIN}/elsewhere`))).status).toBe(404)
  })
})
