/**
 * A claiming process for the cross-process test (`node --import tsx claim-worker.ts`): opens its
 * own `sqliteBackend({ filename })`, prints `ready`, waits for `go` on stdin, then claims batches
 * until the table has no due row and prints every claimed id as one JSON line.
 */
import { createInterface } from 'node:readline'
import { defineOutbox } from '@outboxkit/core'
import { sqliteBackend } from '@outboxkit/sqlite'

const [file, table, batch] = process.argv.slice(2) as [string, string, string]
const outbox = defineOutbox({ table })
const backend = sqliteBackend({ filename: file, busyTimeoutMs: 30_000 })
const lines = createInterface({ input: process.stdin })
process.stdout.write('ready\n')
for await (const line of lines) {
  if (line.trim() !== 'go') continue
  const ids: string[] = []
  let claims = 0
  for (;;) {
    const rows = await backend.claim({
      table: outbox.table,
      topics: ['t'],
      limit: Number(batch),
      leaseMs: 600_000,
      maxAttempts: 10,
    })
    claims++
    if (rows.length === 0) break
    for (const r of rows) ids.push(r.id)
    // As a relay runs handlers between claims: without a pause, SQLite's busy handler (sleeping
    // waiters, no queue) can let one tight-looping process re-take the lock until the table is empty.
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  process.stdout.write(`${JSON.stringify({ ids, claims })}\n`)
  await backend.close()
  lines.close()
}
