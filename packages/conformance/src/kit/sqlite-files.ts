import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { uniqueTableName } from '../database.js'

/** A path for a fresh SQLite database file under the OS temp dir, unique to this process and call. */
export function tempSqliteFile(prefix: string): string {
  return join(tmpdir(), `${uniqueTableName(prefix)}.db`)
}

/** Deletes a SQLite database file and what SQLite keeps beside it (`-wal`, `-shm`, `-journal`). */
export function removeSqliteFile(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${file}${suffix}`, { force: true })
}
