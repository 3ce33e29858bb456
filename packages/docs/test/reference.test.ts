// docs/reference/ is generated from the packages' TSDoc (`pnpm docs:reference`): this test fails
// when a checked-in page differs from the generation, when an option has no `@defaultValue`, and
// when a documented default is not the one the code applies.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { defineOutbox, type OutboxBackend } from '@outboxkit/core'
import { resolveRetryPolicy } from '@outboxkit/core/adapter'
import { beforeAll, expect, test } from 'vitest'
import { resolveRelayOptions } from '../../core/src/relay/relay-options.js'
import { repoRoot } from '../src/markdown-files.js'
import { extractReferences } from '../src/reference/extract.js'
import type { PackageReference } from '../src/reference/model.js'
import { REFERENCE_DIR, referencePages } from '../src/reference/pages.js'

let refs: PackageReference[] = []
let pages = new Map<string, string>()
beforeAll(() => {
  refs = extractReferences()
  pages = referencePages()
}, 120_000)

test('docs/reference/ is what pnpm docs:reference generates (else run it)', () => {
  const onDisk = readdirSync(join(repoRoot, REFERENCE_DIR)).map((f) => `${REFERENCE_DIR}/${f}`)
  expect(onDisk.sort(), 'pages to add or remove: run pnpm docs:reference').toEqual([...pages.keys()].sort())
  for (const [path, markdown] of pages) {
    expect(readFileSync(join(repoRoot, path), 'utf8'), `${path} is stale: run pnpm docs:reference`).toBe(
      markdown,
    )
  }
})

test('one page per published package, with its options, and core with its events and error codes', () => {
  const core = refs.find((r) => r.dir === 'core')!
  expect(refs.map((r) => r.dir)).toEqual(expect.arrayContaining(['core', 'pg', 'mysql', 'sqlite', 'redis']))
  expect(core.events.map((e) => e.name)).toContain('RelayEvents')
  expect(core.errorCodes.map((e) => e.code)).toContain('NOT_IN_TRANSACTION')
  expect(core.errorCodes.every((e) => e.meaning !== '')).toBe(true)
  expect(core.functions.filter((f) => f.admin).map((f) => f.name)).toEqual(
    expect.arrayContaining(['listDead', 'redrive', 'discard', 'purge', 'outboxStats', 'listBlockedKeys']),
  )
})

test('every optional option states its default (@defaultValue)', () => {
  const missing = refs.flatMap((r) =>
    r.options.flatMap((s) =>
      s.properties
        .filter((p) => p.optional && p.defaultValue === undefined)
        .map((p) => `${r.dir} ${s.name}.${p.name}`),
    ),
  )
  expect(missing).toEqual([])
})

/** The `@defaultValue` of `shape.option` in core's reference. */
function documented(shape: string, option: string): string {
  const core = refs.find((r) => r.dir === 'core')!
  const value = core.options
    .find((s) => s.name === shape)
    ?.properties.find((p) => p.name === option)?.defaultValue
  if (value === undefined) throw new Error(`no @defaultValue for ${shape}.${option}`)
  return value
}

/** A documented default as a value: `1_000` as 1000, `true`, `5 * leaseMs` with the given lease. */
function defaultAsValue(text: string, leaseMs: number): unknown {
  const t = text.replace(/^`([^`]*)`.*$/, '$1').replace(/_/g, '')
  if (t === 'true' || t === 'false') return t === 'true'
  if (/^\d+$/.test(t)) return Number(t)
  const times = /^(\d+) \* leaseMs$/.exec(t)
  if (times) return Number(times[1]) * leaseMs
  const div = /^leaseMs \/ (\d+)$/.exec(t)
  if (div) return leaseMs / Number(div[1])
  const object = /^\{(.*)\}$/.exec(t)
  if (object)
    return Object.fromEntries(
      object[1]!
        .split(',')
        .map((kv) => kv.split(':').map((x) => x.trim()))
        .map(([k, v]) => [k, Number(v)]),
    )
  return t
}

test('the documented defaults of createRelay, its retry policy and defineOutbox are the ones the code applies', () => {
  const backend = {
    claim: async () => [],
    settle: async () => [],
    extendLease: async () => [],
  } as unknown as OutboxBackend
  const resolved = resolveRelayOptions(defineOutbox(), { backend, handlers: { t: async () => {} } })
  const names = [
    'concurrency',
    'batchSize',
    'maxPendingOutcomes',
    'pollIntervalMs',
    'leaseMs',
    'heartbeatMs',
    'maxHandlerMs',
    'maxAttempts',
    'notify',
    'keepDelivered',
    'graceMs',
    'retry',
  ] as const
  for (const name of names) {
    expect(
      defaultAsValue(documented('RelayOptions', name), resolved.leaseMs),
      `RelayOptions.${name}`,
    ).toEqual(resolved[name])
  }
  const retry = resolveRetryPolicy()
  for (const name of ['baseMs', 'maxMs', 'jitter'] as const) {
    expect(defaultAsValue(documented('RetryPolicy', name), 0), `RetryPolicy.${name}`).toBe(retry[name])
  }
  const outbox = defineOutbox()
  expect(defaultAsValue(documented('DefineOutboxOptions', 'maxPayloadBytes'), 0)).toBe(outbox.maxPayloadBytes)
  expect(defaultAsValue(documented('DefineOutboxOptions', 'notify'), 0)).toBe(outbox.notify)
  expect(documented('DefineOutboxOptions', 'table')).toBe(`\`'${outbox.table.name}'\``)
})
