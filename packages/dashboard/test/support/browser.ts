import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll } from 'vitest'

/** Debian's chromium, which scripts/ensure-chromium.sh installs when missing. */
export const CHROMIUM = process.env.OUTBOXKIT_CHROMIUM ?? '/usr/bin/chromium'

/** Runs scripts/ensure-chromium.sh (apt-get install chromium when missing); only the browser tests call it. */
export function ensureChromium(): void {
  if (process.env.OUTBOXKIT_CHROMIUM) return
  const script = fileURLToPath(new URL('../../../../scripts/ensure-chromium.sh', import.meta.url))
  execFileSync('bash', [script], { stdio: ['ignore', 'inherit', 'inherit'], timeout: 900_000 })
}

/**
 * A headless Chromium on a fresh profile directory (playwright passes it as `--user-data-dir`;
 * it refuses that flag in `args`); `close()` also removes the profile.
 */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'outboxkit-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1100, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  return {
    context,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

/** A node:http server on 127.0.0.1 and a free port. */
export async function serve(listener: RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** What {@link useChromium} gives a test file: the browser's context once it is launched. */
export interface ChromiumInFile {
  /** The browser context (read it inside tests or hooks). */
  readonly context: BrowserContext
  /**
   * A new page on `url`, resolved once the dashboard loaded (`body[data-loaded="true"]`);
   * `prepare` runs on the page before it navigates.
   */
  openLoaded(url: string, prepare?: (page: Page) => void): Promise<Page>
}

/**
 * A headless Chromium ({@link ensureChromium}, then {@link launchChromium}) for the file it is
 * called in: launched before all tests, closed after all.
 */
export function useChromium(): ChromiumInFile {
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined
  beforeAll(async () => {
    ensureChromium()
    browser = await launchChromium()
  }, 900_000)
  afterAll(async () => {
    await browser?.close()
  })
  const launched = () => {
    if (!browser) throw new Error('chromium launches in beforeAll: use it inside tests or hooks')
    return browser.context
  }
  return {
    get context() {
      return launched()
    },
    async openLoaded(url, prepare) {
      const page = await launched().newPage()
      prepare?.(page)
      await page.goto(url)
      await page.waitForSelector('body[data-loaded="true"]', { timeout: 30_000 })
      return page
    },
  }
}
