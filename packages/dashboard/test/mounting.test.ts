// The dashboard mounted under a base path in Express (dashboard.node, behind express.json()) and
// in Hono (dashboard.fetch, served by @hono/node-server), driven in Debian's chromium: the page
// loads its API under the base path, and its actions change the rows (checked by raw SQL). And in
// Fastify (dashboard.node on the hijacked raw request, with the body Fastify parsed), by fetch.
import type { AddressInfo } from 'node:net'
import { serve as honoServe } from '@hono/node-server'
import { DIALECTS } from '@outboxkit/conformance'
import { createDashboard } from '@outboxkit/dashboard'
import express from 'express'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { Hono } from 'hono'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { useChromium } from './support/browser.js'
import { useDashboardDb } from './support/databases.js'

const chromium = useChromium()

const open = (url: string): Promise<Page> => chromium.openLoaded(url)

// One database is enough here: what is tested is the mounting; the matrix runs in browser.test.ts.
describe.each(DIALECTS.slice(0, 1))('%s', (dialect) => {
  const db = useDashboardDb(dialect, 'dash_mount')
  const ids: Record<string, string> = {}
  const closers: (() => Promise<void>)[] = []

  beforeAll(async () => {
    for (const [label, topic, key] of [
      ['a', 'billing', 'acct-1'],
      ['b', 'billing', 'acct-2'],
      ['c', 'shipping', 'parcel-9'],
    ] as const) {
      const [id] = await db.sql.insert(db.outbox.table.name, [
        {
          topic,
          key,
          state: 'dead',
          attempts: 3,
          lastError: `failed ${label}`,
          payload: { label },
          availableInMs: -1000,
        },
      ])
      ids[label] = id!
    }
    await db.sql.insert(db.outbox.table.name, [{ topic: 'billing', state: 'pending', availableInMs: 60_000 }])
  })
  afterAll(async () => {
    for (const close of closers) await close()
  })

  test('Express: app.use(basePath, dashboard.node) behind express.json(); Redrive from the page', async () => {
    const dashboard = createDashboard({
      outbox: db.outbox,
      backend: db.backend,
      basePath: '/admin/outbox',
      authorize: () => true,
    })
    const app = express()
    app.use(express.json())
    app.use('/admin/outbox', dashboard.node)
    app.get('/', (_req, res) => {
      res.send('the app')
    })
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    closers.push(() => new Promise((resolve) => server.close(() => resolve())))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const page = await open(`${url}/admin/outbox`)
    expect(await page.textContent('#n-dead')).toBe('3')
    expect(await page.textContent('#n-pending')).toBe('1')
    await page.click(`article.dead[data-id="${ids.c}"] button.redrive`)
    await page.click('#confirm-yes')
    await page.waitForSelector('#notice:not([hidden])')
    expect(await page.textContent('#notice')).toBe('Redriven: 1 message.')
    expect(await db.sql.row(db.outbox.table.name, ids.c!)).toMatchObject({ state: 'pending', attempts: 0 })
    // Paths outside the base path are the app's.
    expect(await (await fetch(`${url}/`)).text()).toBe('the app')
    await page.close()
  })

  test('Hono: app.all(basePath/*, (c) => dashboard.fetch(c.req.raw)); bulk Redrive of a search result', async () => {
    const dashboard = createDashboard({
      outbox: db.outbox,
      backend: db.backend,
      basePath: '/ops/outbox',
      authorize: () => true,
    })
    const app = new Hono()
    app.all('/ops/outbox', (c) => dashboard.fetch(c.req.raw))
    app.all('/ops/outbox/*', (c) => dashboard.fetch(c.req.raw))
    const server = await new Promise<ReturnType<typeof honoServe>>((resolve) => {
      const s = honoServe({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
    })
    closers.push(() => new Promise((resolve) => server.close(() => resolve())))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const page = await open(`${url}/ops/outbox`)
    await page.selectOption('#topic', 'billing')
    await page.click('#search button[type=submit]')
    await expect.poll(() => page.textContent('#matching'), { timeout: 30_000 }).toBe('2 matching')
    await page.click('#bulk-redrive')
    expect(await page.textContent('#confirm-text')).toBe('Redrive all 2 matching messages (topic billing)?')
    await page.click('#confirm-yes')
    await page.waitForSelector('#notice:not([hidden])')
    expect(await page.textContent('#notice')).toBe('Redriven: 2 messages.')
    for (const label of ['a', 'b']) {
      expect(await db.sql.row(db.outbox.table.name, ids[label]!)).toMatchObject({
        state: 'pending',
        attempts: 0,
      })
    }
    await page.close()
  })

  test('Fastify: dashboard.node on reply.raw, the body Fastify parsed passed on; bulk Discard by fetch', async () => {
    const dashboard = createDashboard({
      outbox: db.outbox,
      backend: db.backend,
      basePath: '/admin',
      authorize: () => true,
    })
    const app = Fastify()
    const handler = (req: FastifyRequest, reply: FastifyReply) => {
      reply.hijack()
      dashboard.node(Object.assign(req.raw, { body: req.body }), reply.raw)
    }
    app.all('/admin', handler)
    app.all('/admin/*', handler)
    const url = await app.listen({ port: 0, host: '127.0.0.1' })
    closers.push(() => app.close())
    expect((await fetch(`${url}/admin`)).headers.get('content-type')).toMatch(/^text\/html/)
    const [fz] = await db.sql.insert(db.outbox.table.name, [
      {
        topic: 'billing',
        key: 'fast-1',
        state: 'dead',
        attempts: 2,
        lastError: 'declined',
        availableInMs: -500,
      },
    ])
    const stats = (await (await fetch(`${url}/admin/api/stats`)).json()) as { dead: number }
    expect(stats.dead).toBe(1)
    const post = (body: unknown) =>
      fetch(`${url}/admin/api/dead/discard`, {
        method: 'POST',
        headers: { origin: url, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    const stale = await post({ topic: 'billing', expected: 5 })
    expect(stale.status).toBe(409)
    expect(((await stale.json()) as { matching: number }).matching).toBe(1)
    expect(await (await post({ q: 'fast-1', expected: 1 })).json()).toEqual({ matching: 1, discarded: 1 })
    expect(await db.sql.row(db.outbox.table.name, fz!)).toBeUndefined()
    const cross = await fetch(`${url}/admin/api/dead/${ids.a}/discard`, {
      method: 'POST',
      headers: { origin: 'https://evil.example' },
    })
    expect(cross.status).toBe(403)
    expect((await db.sql.row(db.outbox.table.name, ids.a!))?.state).toBe('pending')
  })
})
