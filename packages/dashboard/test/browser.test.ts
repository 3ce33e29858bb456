// The dashboard page in a real browser (Debian's chromium through playwright-core), on every
// database of the matrix: counts shown, search by key, Redrive then delivery by a relay, the XSS
// payload staying text, and a read-only dashboard refusing a forged POST. Rows are checked by raw SQL.
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DIALECTS, deferred } from '@outboxkit/conformance'
import { createRelay } from '@outboxkit/core'
import { createDashboard } from '@outboxkit/dashboard'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { serve, useChromium } from './support/browser.js'
import { useDashboardDb } from './support/databases.js'

const XSS_KEY = '</script><img src=x onerror=alert(1)>'
const XSS_ERROR = '<img src=x onerror="window.__pwned=1"><b>bold?</b>'

const chromium = useChromium()

async function open(url: string): Promise<{ page: Page; dialogs: string[] }> {
  const dialogs: string[] = []
  const page = await chromium.openLoaded(url, (p) =>
    p.on('dialog', (d) => {
      dialogs.push(d.message())
      void d.dismiss()
    }),
  )
  return { page, dialogs }
}

describe.each(DIALECTS)('%s', (dialect) => {
  const db = useDashboardDb(dialect, 'dash_ui')
  const ids: Record<string, string> = {}
  let writable: Awaited<ReturnType<typeof serve>>
  let readOnly: Awaited<ReturnType<typeof serve>>

  beforeAll(async () => {
    const seed = async (label: string, row: Parameters<typeof db.sql.insert>[1][number]) => {
      const [id] = await db.sql.insert(db.outbox.table.name, [{ payload: { label }, ...row }])
      ids[label] = id!
    }
    for (let i = 0; i < 3; i++)
      await seed(`p${i}`, { topic: 'order.created', state: 'pending', availableInMs: 60_000 })
    await seed('d1', {
      topic: 'order.created',
      key: 'order-41',
      state: 'dead',
      attempts: 5,
      lastError: 'HTTP 503 from billing',
      availableInMs: -3000,
    })
    await seed('inv', {
      topic: 'invoice.send',
      key: 'inv-77',
      state: 'dead',
      attempts: 3,
      lastError: 'timeout',
      availableInMs: -2000,
    })
    await db.sql.insert(db.outbox.table.name, [
      {
        topic: 'mail.send',
        key: XSS_KEY,
        state: 'dead',
        attempts: 1,
        lastError: XSS_ERROR,
        payload: { html: XSS_KEY },
        availableInMs: -1000,
      },
    ])
    const options = { outbox: db.outbox, backend: db.backend, basePath: '/outbox' }
    writable = await serve(createDashboard({ ...options, authorize: () => true }).node)
    readOnly = await serve(createDashboard(options).node)
  })
  afterAll(async () => {
    await writable?.close()
    await readOnly?.close()
  })

  test('the page shows the counts of the seeded outbox', async () => {
    const { page } = await open(`${writable.url}/outbox`)
    expect(await page.textContent('#n-pending')).toBe('3')
    expect(await page.textContent('#n-dead')).toBe('3')
    expect(await page.locator('#topics tr').count()).toBe(3)
    const row = page.locator('#topics tr[data-topic="order.created"] td')
    expect(await row.allTextContents()).toEqual(expect.arrayContaining(['order.created', '3', '1']))
    expect(await page.locator('article.dead').count()).toBe(3)
    expect(await page.textContent('#matching')).toBe('3 matching')
    if (dialect === DIALECTS[0]) {
      const file = process.env.OUTBOXKIT_DASHBOARD_SCREENSHOT ?? join(tmpdir(), 'outboxkit-dashboard.png')
      await page.screenshot({ path: file, fullPage: true })
    }
    await page.close()
  })

  test('a search finds a dead message by key', async () => {
    const { page } = await open(`${writable.url}/outbox`)
    await page.fill('#q', 'inv-77')
    await page.click('#search button[type=submit]')
    await expect.poll(() => page.locator('article.dead').count(), { timeout: 30_000 }).toBe(1)
    expect(await page.textContent('article.dead .key')).toBe('inv-77')
    expect(await page.textContent('article.dead .error')).toBe('timeout')
    expect(await page.textContent('#matching')).toBe('1 matching')
    await page.close()
  })

  test('Redrive makes the row pending (raw SQL), then a relay delivers it', async () => {
    const { page } = await open(`${writable.url}/outbox`)
    await page.fill('#q', ids.inv!)
    await page.click('#search button[type=submit]')
    await expect.poll(() => page.locator('article.dead').count(), { timeout: 30_000 }).toBe(1)
    await page.click(`article.dead[data-id="${ids.inv}"] button.redrive`)
    expect(await page.textContent('#confirm-text')).toContain('Redrive 1 message')
    await page.click('#confirm-yes')
    await page.waitForSelector('#notice:not([hidden])')
    expect(await page.textContent('#notice')).toBe('Redriven: 1 message.')
    expect(await db.sql.row(db.outbox.table.name, ids.inv!)).toMatchObject({ state: 'pending', attempts: 0 })
    const delivered = deferred<string>()
    const relay = createRelay(db.outbox, {
      backend: db.relayBackend(),
      handlers: { 'invoice.send': async (m) => delivered.resolve(m.id) },
      keepDelivered: true,
      pollIntervalMs: 100,
    })
    await relay.start()
    try {
      expect(await delivered.promise).toBe(ids.inv)
    } finally {
      await relay.stop()
    }
    expect((await db.sql.row(db.outbox.table.name, ids.inv!))?.state).toBe('delivered')
    await page.close()
  })

  test('the XSS payload stays text: no dialog, no img element, the text shown as typed', async () => {
    const { page, dialogs } = await open(`${writable.url}/outbox`)
    const card = page.locator('article.dead', { hasText: 'mail.send' })
    expect(await card.locator('.key').textContent()).toBe(XSS_KEY)
    expect(await card.locator('.error').textContent()).toBe(XSS_ERROR)
    expect(await card.locator('pre.payload').textContent()).toContain('</script><img src=x onerror=alert(1)>')
    expect(await page.locator('img').count()).toBe(0)
    expect(await page.locator('article.dead b').count()).toBe(0)
    expect(await page.evaluate('typeof window.__pwned')).toBe('undefined')
    expect(dialogs).toEqual([])
    await page.close()
  })

  test('readable on a phone: at 390 px wide nothing overflows sideways', async () => {
    const page = await chromium.context.newPage()
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${writable.url}/outbox`)
    await page.waitForSelector('body[data-loaded="true"]', { timeout: 30_000 })
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    expect(await page.locator('article.dead').first().isVisible()).toBe(true)
    await page.close()
  })

  test('read-only: no action buttons, and a forged POST from the page is 403 with the row unchanged', async () => {
    const { page } = await open(`${readOnly.url}/outbox`)
    expect(await page.textContent('#mode')).toBe('read-only')
    expect(await page.locator('button.redrive').first().isVisible()).toBe(false)
    const forged = await page.evaluate(async (id) => {
      const r = await fetch(`/outbox/api/dead/${id}/discard`, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      })
      return { status: r.status, body: (await r.json()) as { error: { code: string } } }
    }, ids.d1!)
    expect(forged.status).toBe(403)
    expect(forged.body.error.code).toBe('READ_ONLY')
    expect(await db.sql.row(db.outbox.table.name, ids.d1!)).toMatchObject({ state: 'dead', attempts: 5 })
    await page.close()
  })
})
