import { toOutboxError } from '../../outbox/errors.js'
import type { PostgresExecutor } from './backend.js'

// How a PostgreSQL backend sends one statement: errors mapped to OutboxError, prepared-statement
// names for drivers that cache them.

const names = new Map<string, string>()
/**
 * A prepared-statement name unique to the statement text (FNV-1a hash), so that outboxes on
 * different tables sharing one connection never reuse a name for another statement.
 */
export function statementName(base: string, text: string): string {
  let name = names.get(text)
  if (!name) {
    let h = 0x811c9dc5
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i)
      h = Math.imul(h, 0x01000193)
    }
    name = `${base}_${(h >>> 0).toString(36)}`
    names.set(text, name)
  }
  return name
}

export function rowsAffected(rows: Record<string, unknown>[]): number {
  const n = rows[0]?.n
  return typeof n === 'number' ? n : Number(n ?? 0)
}

/**
 * Runs one statement: `what` names it in errors (an {@link OutboxError} from the driver's), `base`
 * gives a prepared-statement name (see {@link statementName}) to drivers that cache them.
 */
export type PostgresRun = (
  what: string,
  text: string,
  params: readonly unknown[],
  base?: string,
) => Promise<Record<string, unknown>[]>

/** The {@link PostgresRun} of `executor`. */
export function postgresRun(executor: PostgresExecutor): PostgresRun {
  const source = executor.name
  return async (what, text, params, base) => {
    try {
      return await executor.query(text, params, base === undefined ? undefined : statementName(base, text))
    } catch (err) {
      throw toOutboxError(err, source, what)
    }
  }
}
