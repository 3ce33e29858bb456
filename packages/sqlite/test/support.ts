import { removeSqliteFile, tempSqliteFile } from '@outboxkit/conformance'
import Database from 'better-sqlite3'

export { nextEvent } from '@outboxkit/conformance'

/** A database file under the OS temp dir, with connections that are closed and files removed by `cleanup`. */
export interface TempDatabase {
  readonly file: string
  /** A new connection to the file, in WAL mode with a busy timeout (the advised settings). */
  open(options?: Database.Options): Database.Database
  /** Closes every connection `open` made and deletes the file (and its -wal / -shm). */
  cleanup(): void
}

/** Creates a {@link TempDatabase}. */
export function tempDatabase(prefix = 'sqlite'): TempDatabase {
  const file = tempSqliteFile(prefix)
  const opened: Database.Database[] = []
  return {
    file,
    open(options) {
      const db = new Database(file, options)
      db.pragma('journal_mode = WAL')
      opened.push(db)
      return db
    },
    cleanup() {
      for (const db of opened) if (db.open) db.close()
      removeSqliteFile(file)
    },
  }
}

/** Every row of an outbox table, by id, read on `db` (outside any transaction of the test). */
export function tableRows(db: Database.Database, table: string): Record<string, unknown>[] {
  return db.prepare(`SELECT * FROM "${table}" ORDER BY id`).all() as Record<string, unknown>[]
}
