// Each folder of packages/core/src says what it may import (docs/architecture.md), so a reader
// finds a concept in its folder and the dependencies point one way: outbox <- telemetry <-
// protocol <- dialect, admin, relay. This test reads every import of core's sources.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src')

/** What each top folder may import besides itself. */
const ALLOWED: Record<string, readonly string[]> = {
  outbox: [],
  telemetry: ['outbox'],
  protocol: ['outbox', 'telemetry'],
  dialect: ['outbox', 'protocol', 'telemetry'],
  admin: ['outbox', 'protocol'],
  relay: ['outbox', 'protocol', 'telemetry', 'admin'],
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  )
}

/** Every relative import of `file`, as paths under src (`dialect/mysql/statements.ts`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const specifiers = [...text.matchAll(/\b(?:import|export)\b[^'"]*?\bfrom\s+'(\.[^']+)'/g)].map((m) => m[1]!)
  return specifiers.map((s) => relative(SRC, resolve(dirname(file), s)).replace(/\.js$/, '.ts'))
}

/** Why `from` may not import `to`, or undefined when it may. */
function violation(from: string, to: string): string | undefined {
  const [top, sub] = from.split('/')
  const [toTop, toSub] = to.split('/')
  if (!from.includes('/')) return undefined // index.ts and adapter.ts re-export everything
  if (!to.includes('/')) return `${from} imports the entry point ${to}`
  if (top === toTop) {
    // A dialect's folder imports only itself and the shared identifiers, never another dialect.
    const inDialect = top === 'dialect' && sub !== undefined && from.split('/').length > 2
    if (!inDialect) return undefined
    if (to === 'dialect/sql-identifiers.ts' || toSub === sub) return undefined
    return `${from} imports another dialect's ${to}`
  }
  return ALLOWED[top!]?.includes(toTop!) ? undefined : `${top}/ may not import ${toTop}/ (${from} -> ${to})`
}

describe('folder import rules of packages/core/src', () => {
  const files = sources(SRC).map((f) => relative(SRC, f))

  test('every source file is in a known folder (or is an entry point)', () => {
    const unknown = files.filter((f) => f.includes('/') && !(f.split('/')[0]! in ALLOWED))
    expect(unknown).toEqual([])
  })

  test('every import follows its folder rule', () => {
    const bad = files.flatMap((f) =>
      importsOf(join(SRC, f)).flatMap((to) => {
        const why = violation(f, to)
        return why ? [why] : []
      }),
    )
    expect(bad).toEqual([])
  })

  test('the rules catch what they forbid', () => {
    expect(violation('outbox/message.ts', 'protocol/backend.ts')).toMatch(
      /outbox\/ may not import protocol\//,
    )
    expect(violation('protocol/publisher.ts', 'dialect/postgres/publish-statement.ts')).toBeDefined()
    expect(violation('relay/claimer.ts', 'dialect/postgres/backend.ts')).toBeDefined()
    expect(violation('dialect/sqlite/statements.ts', 'dialect/postgres/statements.ts')).toMatch(
      /another dialect/,
    )
    expect(violation('dialect/mysql/statements/claim.ts', 'dialect/mysql/statements.ts')).toBeUndefined()
    expect(violation('dialect/postgres/statements/table.ts', 'dialect/sql-identifiers.ts')).toBeUndefined()
    expect(violation('dialect/ddl.ts', 'dialect/mysql/statements.ts')).toBeUndefined()
    expect(violation('admin/stats.ts', 'telemetry/otel.ts')).toBeDefined()
  })
})
