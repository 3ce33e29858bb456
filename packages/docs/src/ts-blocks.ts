// The ```ts blocks of a Markdown page, with the context a page declares for its fragments.
//
// Conventions (also in packages/docs/README.md):
// - every ```ts block is type-checked, each as its own ES module;
// - a page declares what its fragments take for granted in a hidden comment, which applies to
//   every later block of the page (several add up; a name the block declares itself, by an
//   import or a declaration, replaces the preamble's):
//       <!-- ts-preamble
//       declare const outbox: import('@outboxkit/core').Outbox
//       -->
// - a `<!-- ts-context ... -->` comment is a preamble for the next block only (the handles that
//   one fragment takes for granted, when blocks of a page differ: a Kysely `db`, a Drizzle `db`);
// - a page stands in for a module of the reader's application that its blocks import
//   (`import { outbox } from './outbox.js'`) with a hidden comment too, in force for later blocks:
//       <!-- ts-module ./outbox.js
//       export declare const outbox: import('@outboxkit/core').Outbox
//       -->
// - a block that is pseudo-code, not TypeScript, is fenced ```ts ignore and is not checked
//   (keep that rare: `ignoredBlocks` lists them).

/** One ```ts block of a page. */
export interface TsBlock {
  /** The page, relative to the repository root. */
  readonly page: string
  /** The 1-based line of the page where the block's code starts (the line after the fence). */
  readonly line: number
  /** The code of the block. */
  readonly code: string
  /** The page's preamble in force for this block (declarations, imports), '' for none. */
  readonly preamble: string
  /** The `ts-context` of this block alone, '' for none. */
  readonly context: string
  /** The page's stand-in modules in force for this block: import specifier to module text. */
  readonly modules: ReadonlyMap<string, string>
  /** Fenced ```ts ignore: pseudo-code, not checked. */
  readonly ignored: boolean
}

const FENCE = /^(`{3,}|~{3,})\s*([^\s`]*)\s*(.*)$/

/** The ```ts (and ```typescript) blocks of `markdown`, in page order, with their preambles. */
export function tsBlocks(page: string, markdown: string): TsBlock[] {
  const lines = markdown.split('\n')
  const blocks: TsBlock[] = []
  const preambles: string[] = []
  const modules = new Map<string, string>()
  let context = ''
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const comment = /^\s*<!--\s*ts-(preamble|context|module)\b\s*(\S*)/.exec(line)
    if (comment) {
      const end = lines.findIndex((l, j) => j >= i && l.includes('-->'))
      if (end < 0) throw new Error(`${page}:${i + 1}: a ts-${comment[1]} comment that never ends (-->)`)
      const body = [line.slice(comment[0].length), ...lines.slice(i + 1, end + 1)]
        .join('\n')
        .replace(/-->\s*$/, '')
        .trim()
      if (comment[1] === 'preamble') preambles.push(`${comment[2]} ${body}`.trim())
      else if (comment[1] === 'context') context = `${comment[2]} ${body}`.trim()
      else modules.set(comment[2]!, body)
      i = end
      continue
    }
    const fence = FENCE.exec(line)
    if (!fence) continue
    const close = lines.findIndex((l, j) => j > i && l.trimEnd() === fence[1])
    const end = close < 0 ? lines.length : close
    const lang = fence[2]!.toLowerCase()
    if (lang === 'ts' || lang === 'typescript') {
      blocks.push({
        page,
        line: i + 2,
        code: lines.slice(i + 1, end).join('\n'),
        preamble: preambles.join('\n'),
        context,
        modules: new Map(modules),
        ignored: /\bignore\b/.test(fence[3]!),
      })
    }
    context = ''
    i = end
  }
  return blocks
}
