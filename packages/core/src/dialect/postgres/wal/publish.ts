import type { Outbox } from '../../../outbox/define-outbox.js'
import { OutboxError } from '../../../outbox/errors.js'
import type { PreparedMessage, PublishResult } from '../../../outbox/message.js'
import type { PostgresPublishStatement } from '../publish-statement.js'
import { inlineTextParameters } from '../values.js'
import { encodeWalContent } from './message.js'
import { walStatementsOf } from './statements-of.js'

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
  const {
    names: { prefix, slot },
    sql,
  } = walStatementsOf(outbox.table)
  const now = Date.now()
  const check = now - (slotSeenAt.get(slot) ?? Number.NEGATIVE_INFINITY) >= SLOT_CHECK_EVERY_MS
  const content = encodeWalContent(messages, now)
  const text = check
    ? guarded
      ? sql.publishGuarded
      : sql.publish
    : guarded
      ? sql.publishGuardedUnchecked
      : sql.publishUnchecked
  const values = check ? [prefix, content, slot] : [prefix, content]
  return {
    text,
    values,
    name: `outboxkit_publish_wal${guarded ? '_guarded' : ''}${check ? '' : '_unchecked'}`,
    // Every value is text: the statement also goes inline, for the simple query protocol. Built
    // only when a driver asks (node-postgres), not on the publishes of the other adapters.
    get simple() {
      return inlineTextParameters(text, values)
    },
  }
}

/**
 * How long a publish trusts that the slot exists after a publish saw it: the lookup in
 * `pg_replication_slots` cost a quarter of the publish rate with 16 producers (docs/wal.md), so
 * it runs once per slot and process every 10 s. A slot dropped in between (`outboxkit slot drop`,
 * a decommission that loses its unconfirmed messages anyway) is noticed within 10 s.
 */
const SLOT_CHECK_EVERY_MS = 10_000
const slotSeenAt = new Map<string, number>()

/**
 * Every message of a WAL publish is published (no `dedupKey` took this path), unless the rows say
 * the outbox has no slot: then nothing was written, and this throws `WAL_UNAVAILABLE`.
 */
export function walPublishResult(
  outbox: Outbox,
  messages: readonly PreparedMessage[],
  rows: readonly Record<string, unknown>[],
  source: string,
  statement: PostgresPublishStatement,
): PublishResult[] {
  const slot = rows[0]?.inserted
  const { slot: name } = walStatementsOf(outbox.table).names
  if (slot === true || slot === 't') {
    // A statement that looked the slot up and found it: trust it for SLOT_CHECK_EVERY_MS.
    if (!statement.name.endsWith('_unchecked')) slotSeenAt.set(name, Date.now())
  } else {
    slotSeenAt.delete(name)
    throw new OutboxError(
      'WAL_UNAVAILABLE',
      `the replication slot ${name} of table ${outbox.table.display} does not exist, so a message written into the WAL would be lost; nothing was written. Run migrate(outbox, backend) with transport 'wal' (it creates the slot), or use transport 'table'. See docs/wal.md.`,
      { source },
    )
  }
  return messages.map((m) => ({ id: m.id, published: true }))
}
