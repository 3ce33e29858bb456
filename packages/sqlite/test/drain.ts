/**
 * A quick drain figure for the SQLite backend (not a test):
 *
 *   TSX_TSCONFIG_PATH=tsconfig.json node --import tsx packages/sqlite/test/drain.ts [backlog] [own|shared]
 *
 * Publishes `backlog` messages (default 20 000) into a fresh WAL database file, then times one
 * relay (concurrency 200, batchSize 200, no-op handler) draining them: from `relay.start()` to
 * the last outcome written. `own`: the backend opens its own connection (default); `shared`: it
 * uses the producers' Database.
 */
import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deferred } from '@outboxkit/conformance'
import { createRelay, defineOutbox, migrate } from '@outboxkit/core'
import { publishMany, sqliteBackend } from '@outboxkit/sqlite'
import Database from 'better-sqlite3'

const backlog = Number(process.argv[2] ?? 20_000)
const mode = process.argv[3] === 'shared' ? 'shared' : 'own'
const file = join(tmpdir(), `outboxkit-drain-${process.pid}.db`)
const db = new Database(file)
db.pragma('journal_mode = WAL')
const outbox = defineOutbox({ table: 'outbox' })
const backend = mode === 'shared' ? sqliteBackend(db) : sqliteBackend({ filename: file })
await migrate(outbox, backend)

const publishStarted = performance.now()
for (let i = 0; i < backlog; i += 1_000) {
  const batch = Array.from({ length: Math.min(1_000, backlog - i) }, (_, j) => ({
    topic: 'bench',
    payload: { i: i + j, note: 'a small payload' },
  }))
  db.transaction(() => {
    void publishMany(outbox, db, batch)
  })()
}
const publishMs = performance.now() - publishStarted

let settled = 0
const finished = deferred()
const relay = createRelay(outbox, {
  backend,
  concurrency: 200,
  batchSize: 200,
  pollIntervalMs: 100,
  telemetry: false,
  handlers: { bench: async () => {} },
})
relay.on('delivered', (e) => {
  if (e.settled && ++settled === backlog) finished.resolve()
})
const started = performance.now()
await relay.start()
await finished.promise
const drainMs = performance.now() - started
await relay.stop()
const left = Number(db.prepare('SELECT count(*) FROM outbox').pluck().get())
db.close()
for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
console.log(
  JSON.stringify({
    backlog,
    backend: mode,
    sqlite: (new Database(':memory:').prepare('SELECT sqlite_version()').pluck().get() as string) ?? '?',
    publishMsgPerS: Math.round(backlog / (publishMs / 1000)),
    drainMs: Math.round(drainMs),
    drainMsgPerS: Math.round(backlog / (drainMs / 1000)),
    rowsLeft: left,
  }),
)
