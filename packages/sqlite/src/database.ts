import Database from 'better-sqlite3'

/** A better-sqlite3 database connection (`new Database(file)`). */
export type SqliteDatabase = Database.Database

/**
 * True when `value` is a better-sqlite3 `Database`: an instance of the installed better-sqlite3, or
 * of another copy of it (a duplicated install), recognised by the members only better-sqlite3's
 * `Database` has together.
 */
export function isSqliteDatabase(value: unknown): value is SqliteDatabase {
  if (value instanceof Database) return true
  if (!value || typeof value !== 'object') return false
  const v = value as Record<string, unknown>
  return (
    typeof v.prepare === 'function' &&
    typeof v.transaction === 'function' &&
    typeof v.pragma === 'function' &&
    typeof v.backup === 'function' &&
    typeof v.serialize === 'function' &&
    typeof v.inTransaction === 'boolean' &&
    typeof v.open === 'boolean'
  )
}

type Statement = Database.Statement<unknown[], Record<string, unknown>>
const statements = new WeakMap<SqliteDatabase, Map<string, Statement>>()
/** Distinct SQL texts kept prepared per connection (outboxkit's own statements are a few per table). */
const MAX_CACHED = 64

/** `sql` prepared once per connection (better-sqlite3 compiles on every `prepare`). */
export function prepared(db: SqliteDatabase, sql: string): Statement {
  let cache = statements.get(db)
  if (!cache) {
    cache = new Map()
    statements.set(db, cache)
  }
  let statement = cache.get(sql)
  if (!statement) {
    if (cache.size >= MAX_CACHED) cache.clear()
    statement = db.prepare<unknown[], Record<string, unknown>>(sql)
    cache.set(sql, statement)
  }
  return statement
}
