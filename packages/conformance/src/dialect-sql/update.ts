import type { DialectParts } from './dialect-parts.js'
import type { InspectFn, RowChanges } from './types.js'

/** Updates the row `id` of `table` with `changes` (nothing to change: no statement). */
export async function updateRow(
  d: DialectParts,
  inspect: InspectFn,
  table: string,
  id: string,
  changes: RowChanges,
): Promise<void> {
  const q = d.ident
  const sets: string[] = []
  const params: unknown[] = []
  const p = () => d.param(params.length)
  if (changes.topic !== undefined) {
    params.push(changes.topic)
    sets.push(`topic = ${p()}`)
  }
  if (changes.attempts === 'increment') sets.push('attempts = attempts + 1')
  else if (changes.attempts !== undefined) {
    params.push(changes.attempts)
    sets.push(`attempts = ${p()}`)
  }
  if (changes.lastError !== undefined) {
    params.push(changes.lastError)
    sets.push(`last_error = ${p()}`)
  }
  if (changes.availableInMs !== undefined) {
    params.push(
      d.dialect === 'mysql' ? Math.round(changes.availableInMs * 1000) : Math.round(changes.availableInMs),
    )
    sets.push(`available_at = ${d.nowPlusMs(p())}`)
  }
  if (changes.availableAtOf !== undefined) {
    params.push(changes.availableAtOf)
    sets.push(`available_at = ${d.availableAtOf(q(table), p())}`)
  }
  if (sets.length === 0) return
  params.push(id)
  await inspect(`UPDATE ${q(table)} SET ${sets.join(', ')} WHERE id = ${p()}`, params)
}
