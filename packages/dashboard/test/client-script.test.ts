// The page's script is compiled from client/app.ts by the package's build: the committed output
// must be what the build makes from the current source, and small.
import { readFileSync } from 'node:fs'
import { expect, test } from 'vitest'
import { CLIENT_SCRIPT } from '../src/page/generated/client-script.js'

test('src/page/generated/client-script.ts is the compiled client/*.ts (run pnpm --filter @outboxkit/dashboard build:client)', async () => {
  // @ts-expect-error: a plain .mjs build script without types
  const { CLIENT_FILES, compileClient } = (await import('../scripts/client-script.mjs')) as {
    CLIENT_FILES: string[]
    compileClient(sources: string[]): string
  }
  const sources = CLIENT_FILES.map((f) => readFileSync(new URL(`../client/${f}`, import.meta.url), 'utf8'))
  expect(CLIENT_SCRIPT).toBe(compileClient(sources))
})

test('the page script puts data in as text only and stays small', () => {
  expect(CLIENT_SCRIPT).not.toMatch(
    /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/,
  )
  expect(CLIENT_SCRIPT.length).toBeLessThan(32_000)
})
