import type { Outbox } from '../../../outbox/define-outbox.js'
import { OutboxError } from '../../../outbox/errors.js'
import type { PreparedMessage, PublishResult } from '../../../outbox/message.js'
import type { PostgresPublishStatement } from '../publish-statement.js'
import { postgresTable } from '../statements/table.js'
import { postgresWalStatements } from '../statements/wal.js'
import { encodeWalContent } from './message.js'
import { walNames } from './names.js'

/**
 * Whether `messages` (one publish call) go into the WAL: the outbox has `transport: 'wal'` and no
 * message needs the table. A `dedupKey` needs the table's unique index to find an earlier message;
 * a `delayMs` needs a row that waits (the slot delivers in commit order and cannot hold a message
 * back without holding back every later one); an ordered topic needs the table's per-key sequence
 * and head-of-key claim. A batch with any of them goes into the table whole: one statement.
 */
export function takesWalPath(outbox: Outbox, messages: readonly PreparedMessage[]): boolean {
  if (outbox.transport !== 'wal') return false
  for (const m of messages) {
    if (m.dedupKey !== null || m.delayMs > 0 || outbox.orderedTopics.has(m.topic)) return false
  }
  return true
}

/** The one statement that writes `messages` into the WAL in the caller's transaction. */
export function postgresWalPublishStatement(
  outbox: Outbox,
  messages: readonly PreparedMessage[],
  guarded: boolean,
): PostgresPublishStatement {
  const { prefix, slot } = walNames(outbox.table)
  const sql = postgresWalStatements(postgresTable(outbox.table), slot)
  return {
    text: guarded ? sql.publishGuarded : sql.publish,
    values: [prefix, encodeWalContent(messages, Date.now()), slot],
    name: guarded ? 'outboxkit_publish_wal_guarded' : 'outboxkit_publish_wal',
  }
}

/**
 * Every message of a WAL publish is published (no `dedupKey` took this path), unless the rows say
 * the outbox has no slot: then nothing was written, and this throws `WAL_UNAVAILABLE`.
 */
export function walPublishResult(
  outbox: Outbox,
  messages: readonly PreparedMessage[],
  rows: readonly Record<string, unknown>[],
  source: string,
): PublishResult[] {
  const slot = rows[0]?.inserted
  if (slot !== true && slot !== 't') {
    throw new OutboxError(
      'WAL_UNAVAILABLE',
      `the replication slot ${walNames(outbox.table).slot} of table ${outbox.table.display} does not exist, so a message written into the WAL would be lost; nothing was written. Run migrate(outbox, backend) with transport 'wal' (it creates the slot), or use transport 'table'. See docs/wal.md.`,
      { source },
    )
  }
  return messages.map((m) => ({ id: m.id, published: true }))
}
