import type { Outbox, PublishMessage } from '@outboxkit/core'
import type { LedgerSql } from './ledger-sql.js'
import type { ProducerStats } from './producer.js'
import type { OpenSession, Session } from './sessions.js'

/**
 * The keyed messages of a transaction as (id, key), sorted by key (stable: a key's messages keep
 * their publish order), so two transactions take their keys' counter rows in the same order.
 */
function keyedInKeyOrder(
  ids: readonly string[],
  messages: readonly PublishMessage<Outbox>[],
): [string, string][] {
  const keyed: [string, string][] = []
  messages.forEach((m, i) => {
    if (typeof m.key === 'string') keyed.push([ids[i]!, m.key])
  })
  return keyed.sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
}

/**
 * One business transaction of {@link produce} (its messages all of one topic): publishes them,
 * records them in `produced` and keyed ones in their key's commit order, then commits or rolls
 * back. Throws when it failed for a reason other than its planned rollback.
 */
export async function transaction(
  open: OpenSession,
  statements: LedgerSql,
  messages: PublishMessage<Outbox>[],
  rollbackRate: number,
  stats: ProducerStats,
  unrecorded: string[],
): Promise<void> {
  let session: Session
  try {
    session = await open()
  } catch (err) {
    stats.connectErrors++
    throw err
  }
  let ids: string[] = []
  let commitSent = false
  let failed = false
  try {
    await session.begin()
    ids = (await session.publish(messages)).map((r) => r.id)
    await session.exec(statements.insertProduced(ids.length), [...ids, messages[0]!.topic])
    for (const [id, key] of keyedInKeyOrder(ids, messages))
      await session.exec(statements.numberInKey!, [id, key])
    const roll = Math.random()
    if (roll < rollbackRate) {
      if (roll < rollbackRate / 2) await session.exec(statements.failing, []).catch(() => {})
      // Whether ROLLBACK answers or the connection is gone, nothing of it committed.
      await session.rollback().catch(() => {})
      unrecorded.push(...ids)
      stats.rolledBackTransactions++
      stats.rolledBackMessages += ids.length
      return
    }
    commitSent = true
    try {
      await session.commit()
      stats.committedTransactions++
      stats.committedMessages += ids.length
    } catch {
      failed = true
      stats.commitErrors++
      stats.commitErrorMessages += ids.length
    }
  } catch (err) {
    failed = true
    await session.rollback().catch(() => {})
    if (!commitSent) {
      // Failed before COMMIT was sent: nothing committed, and what it had published never will.
      stats.failedTransactions++
      unrecorded.push(...ids)
    }
    throw err
  } finally {
    session.release(failed)
  }
}
