// The page's script is compiled from client/app.ts by the package's build: the committed output
// must be what the build makes from the current source, and small.
import { readFileSync } from 'node:fs'
import { expect, test } from 'vitest'
import { CLIENT_SCRIPT } from '../src/page/generated/client-script.js'

test('src/page/generated/client-script.ts is the compiled client/app.ts (run pnpm --filter @outboxkit/dashboard build:client)', async () => {
  // @ts-expect-error: a plain .mjs build script without types
  const { compileClient } = (await import('../scripts/client-script.mjs')) as {
    compileClient(s: string): string
  }
  const source = readFileSync(new URL('../client/app.ts', import.meta.url), 'utf8')
  expect(CLIENT_SCRIPT).toBe(compileClient(source))
})

test('the page script puts data in as text only and stays small', () => {
  expect(CLIENT_SCRIPT).not.toMatch(
    /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/,
  )
  expect(CLIENT_SCRIPT.length).toBeLessThan(32_000)
})
