import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type BrowserContext, chromium } from 'playwright-core'

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
