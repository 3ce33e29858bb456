// Every ```ts block of the documentation (README.md, docs/, the packages' and examples' READMEs) type-checks
// against the workspace packages, strict: a renamed option or field fails here, not in a reader's
// editor. Fragments take what they use from their page's `<!-- ts-preamble ... -->` comment;
// ```ts ignore blocks (pseudo-code) are not checked and are listed below.
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { beforeAll, expect, test } from 'vitest'
import { markdownFiles, repoRoot } from '../src/markdown-files.js'
import { REFERENCE_DIR } from '../src/reference/pages.js'
import { type TsBlock, tsBlocks } from '../src/ts-blocks.js'
import { checkTsBlocks } from '../src/ts-check.js'

// A page with one good and one wrong block, checked in the same program as the real pages: it
// proves the checker catches a bad block and points at its page line.
const planted = [
  '```ts',
  "import { defineOutbox } from '@outboxkit/core'",
  "export const outbox = defineOutbox({ table: 'outbox' })",
  '```',
  '<!-- ts-preamble',
  "declare const outbox: import('@outboxkit/core').Outbox",
  '-->',
  '```ts',
  "import { listBlockedKeys } from '@outboxkit/core'",
  "declare const backend: import('@outboxkit/core').OutboxBackend",
  'for (const blocked of await listBlockedKeys(outbox, backend)) console.log(b.key)',
  '```',
  '```ts ignore',
  'this is not TypeScript',
  '```',
].join('\n')

let realBlocks: TsBlock[] = []
let problems: string[] = []

beforeAll(() => {
  // docs/reference/ shows signatures, generated from the type-checked sources (reference.test.ts).
  const pages = markdownFiles({ examples: true }).filter(
    (file) => !relative(repoRoot, file).startsWith(`${REFERENCE_DIR}/`),
  )
  realBlocks = pages.flatMap((file) => tsBlocks(relative(repoRoot, file), readFileSync(file, 'utf8')))
  problems = checkTsBlocks([...realBlocks, ...tsBlocks('planted.md', planted)])
}, 240_000)

test('every ts block of the documentation type-checks', () => {
  expect(realBlocks.length).toBeGreaterThan(80)
  expect(problems.filter((p) => !p.startsWith('planted.md:'))).toEqual([])
})

test('the checker catches a wrong block, at its page line, and skips ts ignore blocks', () => {
  expect(problems.filter((p) => p.startsWith('planted.md:'))).toEqual([
    "planted.md:11: TS2304: Cannot find name 'b'.",
  ])
})

test('pseudo-code blocks (ts ignore) stay rare and visible', () => {
  expect(realBlocks.filter((b) => b.ignored).map((b) => `${b.page}:${b.line}`)).toEqual([])
})
