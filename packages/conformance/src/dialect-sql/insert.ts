import { randomUUID } from 'node:crypto'
import type { DialectParts } from './dialect-parts.js'
import type { InspectFn, SeedRow } from './types.js'

/** Inserts `seeds` into `table` in one statement; returns their ids (generated here, in order). */
export async function insertSeeds(
  d: DialectParts,
  inspect: InspectFn,
  table: string,
  seeds: readonly SeedRow[],
): Promise<string[]> {
  if (seeds.length === 0) return []
  const q = d.ident
  const withCreated = seeds.some((s) => s.createdInMs !== undefined)
  const cols = ['id', 'topic', q('key'), 'payload', 'state', 'attempts', 'available_at', 'last_error']
  if (withCreated) cols.push('created_at')
  const ids: string[] = []
  const params: unknown[] = []
  const p = () => d.param(params.length)
  // MySQL adds microseconds (INTERVAL n MICROSECOND); the others add milliseconds.
  const offset = (ms: number) => (d.dialect === 'mysql' ? Math.round(ms * 1000) : Math.round(ms))
  const tuples = seeds.map((s) => {
    const id = randomUUID()
    ids.push(id)
    const values: string[] = []
    const add = (v: unknown, wrap: (x: string) => string = (x) => x) => {
      params.push(v)
      values.push(wrap(p()))
    }
    add(id)
    add(s.topic ?? 't')
    add(s.key ?? null)
    add(s.payloadText ?? JSON.stringify(s.payload ?? {}), d.jsonParam)
    add(s.state ?? 'pending')
    add(s.attempts ?? 0)
    add(offset(s.availableInMs ?? 0), d.nowPlusMs)
    add(s.lastError ?? null)
    if (withCreated) add(offset(s.createdInMs ?? 0), d.nowPlusMs)
    return `(${values.join(', ')})`
  })
  await inspect(`INSERT INTO ${q(table)} (${cols.join(', ')}) VALUES ${tuples.join(', ')}`, params)
  return ids
}
