import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { uniqueTableName } from '@outboxkit/conformance'
import type { Relay, RelayEvents } from '@outboxkit/core'
import Database from 'better-sqlite3'

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
  const file = join(tmpdir(), `${uniqueTableName(prefix)}.db`)
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
      for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${file}${suffix}`, { force: true })
    },
  }
}

/**
 * Resolves with the next `event` of `relay` that matches `where`, or rejects after `timeoutMs`.
 * Subscribe (call this) before the action that causes the event.
 */
export function nextEvent<K extends keyof RelayEvents>(
  relay: Relay,
  event: K,
  {
    where = () => true,
    timeoutMs = 10_000,
  }: { where?: (e: RelayEvents[K]) => boolean; timeoutMs?: number } = {},
): Promise<RelayEvents[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off()
      reject(new Error(`timed out after ${timeoutMs} ms waiting for relay event '${String(event)}'`))
    }, timeoutMs)
    const off = relay.on(event, (e) => {
      if (!where(e)) return
      clearTimeout(timer)
      off()
      resolve(e)
    })
  })
}

/** Every row of an outbox table, by id, read on `db` (outside any transaction of the test). */
export function tableRows(db: Database.Database, table: string): Record<string, unknown>[] {
  return db.prepare(`SELECT * FROM "${table}" ORDER BY id`).all() as Record<string, unknown>[]
}
