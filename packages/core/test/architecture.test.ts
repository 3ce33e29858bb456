import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'

// What each folder of packages/core/src may import (docs/architecture.md shows the same table).
// A folder may always import its own files. index.ts and adapter.ts only re-export.
const MAY_IMPORT: Record<string, readonly string[]> = {
  outbox: [],
  telemetry: ['outbox'],
  protocol: ['outbox', 'telemetry'],
  admin: ['outbox', 'protocol'],
  dialect: ['outbox', 'protocol', 'telemetry'],
  relay: ['outbox', 'protocol', 'telemetry', 'admin'],
}
// The only packages core's source imports: it depends on no database driver.
const PACKAGES = new Set(['uuidv7', '@opentelemetry/api'])

const src = fileURLToPath(new URL('../src/', import.meta.url))
const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : []
  })
/** The module specifiers a file imports (comments, such as TSDoc examples, left out). */
const importsOf = (file: string): string[] => {
  const code = readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '')
  return [...code.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]!)
}

/** The folder of a file under src (`dialect/postgres` for dialect folders), or '' at the root. */
const folderOf = (file: string): string => {
  const parts = relative(src, file).split('/')
  if (parts.length === 1) return ''
  return parts[0] === 'dialect' && parts.length > 2 ? `dialect/${parts[1]}` : parts[0]!
}

describe("core's folders import only what they may", () => {
  const all = files(src)

  test('every folder has a rule', () => {
    const folders = new Set(all.map((f) => folderOf(f).split('/')[0]).filter(Boolean))
    expect([...folders].sort()).toEqual(Object.keys(MAY_IMPORT).sort())
  })

  test.each(all.map((f) => [relative(src, f), f]))('%s', (_name, file) => {
    const from = folderOf(file)
    const top = from.split('/')[0]!
    const wrong: string[] = []
    for (const spec of importsOf(file)) {
      if (!spec.startsWith('.')) {
        if (!PACKAGES.has(spec) && !spec.startsWith('node:'))
          wrong.push(`${spec} (a package core must not depend on)`)
        continue
      }
      if (from === '') continue
      const to = folderOf(resolve(file, '..', spec.replace(/\.js$/, '.ts')))
      const toTop = to.split('/')[0]!
      if (
        to === from ||
        (top === 'dialect' && to === 'dialect') ||
        (from === 'dialect' && toTop === 'dialect')
      )
        continue
      if (top === 'dialect' && toTop === 'dialect') wrong.push(`${spec} (one dialect never imports another)`)
      else if (!MAY_IMPORT[top]!.includes(toTop))
        wrong.push(`${spec} (${top}/ may import ${MAY_IMPORT[top]!.join(', ') || 'nothing else'})`)
    }
    expect(wrong).toEqual([])
  })
})
