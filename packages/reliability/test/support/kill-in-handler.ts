import type { OutboxDialect } from '@outboxkit/core'
import { pollUntil } from '../../src/database.js'
import { liveRows } from '../../src/ledger.js'
import { ledgerSql } from '../../src/ledger-sql.js'
import type { FleetFixture } from './fleet-fixture.js'

/**
 * The kill loop of the mid-handler crash tests: up to `kills` times, SIGKILLs a relay that is
 * inside a handler right now (it has written a side effect whose message is not settled yet),
 * spawns a replacement and keeps at least two relays draining before the next kill; then waits
 * for the replacements and for the drain (no live row left, within `drainTimeoutMs`).
 */
export async function killInHandlersThenDrain(
  f: FleetFixture,
  dialect: OutboxDialect,
  opts: { kills: number; drainTimeoutMs: number },
): Promise<void> {
  const statements = ledgerSql(dialect, f.tables)
  const live = () => liveRows(f.db, f.tables)
  const replacements: Promise<unknown>[] = []
  while (f.fleet.deaths.length < opts.kills && (await live()) > 0) {
    const victim = await pollUntil(
      async () => {
        for (const r of f.fleet.running) {
          const [row] = await f.db.query<{ n: number }>(statements.inHandler, [r.pid])
          if (Number(row!.n) > 0) return r
        }
        return (await live()) === 0 ? 'drained' : undefined
      },
      { timeoutMs: 60_000, intervalMs: 10, what: 'a relay inside a handler' },
    )
    if (victim === 'drained') break
    await f.fleet.kill(victim)
    replacements.push(f.fleet.spawn())
    await pollUntil(() => f.fleet.running.length >= 2, { timeoutMs: 60_000, what: 'a replacement relay' })
  }
  await Promise.all(replacements)
  await pollUntil(async () => (await live()) === 0, {
    timeoutMs: opts.drainTimeoutMs,
    intervalMs: 200,
    what: 'the drain',
  })
}
