// Every relative link in the documentation (README.md, docs/, the packages' and examples' READMEs)
// points at a file that exists, and every #anchor at a heading of that file, as GitHub renders it.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import { expect, test } from 'vitest'
import { markdownFiles, repoRoot } from '../src/markdown-files.js'

const root = repoRoot

/**
 * The anchors of `markdown` as GitHub renders it: each heading's (lowercase, punctuation dropped,
 * spaces as hyphens, repeats numbered) and each `<a id="...">`.
 */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const line of withoutCode(markdown).split('\n')) {
    for (const a of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(a[1]!)
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!m) continue
    const base = m[1]!
      .split('`')
      .map((part, i) => (i % 2 === 1 ? part : part.replace(/<[^>]+>/g, '')))
      .join('')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

/** `markdown` with its fenced code blocks and inline code blanked out (links there are not links). */
function withoutCode(markdown: string): string {
  return markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, '')
}

/** The relative link targets of `markdown` (no scheme, no mailto), with their line numbers. */
function relativeLinks(markdown: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = []
  withoutCode(markdown)
    .split('\n')
    .forEach((text, i) => {
      const inline = text.replace(/`[^`]*`/g, '')
      for (const m of inline.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const target = m[1]!
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
        links.push({ target, line: i + 1 })
      }
    })
  return links
}

/** What is wrong with each relative link of `file`, as `file:line: message` lines. */
function brokenLinks(file: string): string[] {
  const problems: string[] = []
  const markdown = readFileSync(file, 'utf8')
  for (const { target, line } of relativeLinks(markdown)) {
    const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined]
    const path = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart))
    const where = `${relative(root, file)}:${line}`
    if (!existsSync(path)) {
      problems.push(`${where}: ${target}: no such file`)
      continue
    }
    if (anchor && path.endsWith('.md') && !headingAnchors(readFileSync(path, 'utf8')).has(anchor)) {
      problems.push(`${where}: ${target}: no heading with the anchor #${anchor} in ${relative(root, path)}`)
    }
  }
  return problems
}

test('every relative link in the documentation points at a file, and every anchor at a heading', () => {
  const files = markdownFiles({ examples: true })
  expect(files.length).toBeGreaterThan(10)
  expect(files.flatMap(brokenLinks)).toEqual([])
})

test('the anchor rules match how GitHub renders headings', () => {
  const anchors = headingAnchors(
    '# Poolers: PgBouncer, Supavisor, RDS Proxy\n## `migrate` or `outboxDdl`\n## Ordered topics: the `<table>_keys` table\n## Tuning\n## Tuning\n```\n# not a heading\n```\n',
  )
  expect([...anchors]).toEqual([
    'poolers-pgbouncer-supavisor-rds-proxy',
    'migrate-or-outboxddl',
    'ordered-topics-the-table_keys-table',
    'tuning',
    'tuning-1',
  ])
})
