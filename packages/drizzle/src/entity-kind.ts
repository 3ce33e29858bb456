import { entityKind } from 'drizzle-orm'

/**
 * True when `value` is an instance of a Drizzle class whose entity kind (or a parent's) is `kind`,
 * e.g. `'NodePgSession'`. This is the check Drizzle's own `is()` makes; it lets the adapter tell
 * drivers apart without importing `drizzle-orm/node-postgres` (which would require `pg`) and it
 * works across duplicated installs of drizzle-orm.
 */
export function hasEntityKind(value: unknown, kind: string): boolean {
  if (!value || typeof value !== 'object') return false
  let cls: unknown = Object.getPrototypeOf(value)?.constructor
  while (cls) {
    if (entityKind in (cls as object) && (cls as Record<symbol, unknown>)[entityKind] === kind) return true
    cls = Object.getPrototypeOf(cls)
  }
  return false
}

/** The entity kind of `value`'s class (e.g. `'NodePgTransaction'`), or `undefined`. */
export function entityKindOf(value: unknown): string | undefined {
  if (!value || typeof value !== 'object') return undefined
  const kind = (Object.getPrototypeOf(value)?.constructor as Record<symbol, unknown> | undefined)?.[
    entityKind
  ]
  return typeof kind === 'string' ? kind : undefined
}
