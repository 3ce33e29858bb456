import type { Inbox } from '../../outbox/define-inbox.js'
import { toOutboxError } from '../../outbox/errors.js'
import { type InboxBackend, inboxStatsRowFrom } from '../../protocol/inbox-backend.js'
import type { PostgresExecutor } from './backend.js'
import { postgresRun } from './run.js'
import { postgresInboxStatements } from './statements/inbox.js'

/** The inbox members of a PostgreSQL backend (see {@link InboxBackend}): one statement each. */
export function postgresInboxBackend(executor: PostgresExecutor): Required<InboxBackend> {
  const source = executor.name
  const query = postgresRun(executor)
  return {
    async migrateInbox(inbox: Inbox) {
      try {
        await executor.exec(postgresInboxStatements(inbox.table).migrate)
      } catch (err) {
        throw toOutboxError(err, source, `migrate of inbox table ${inbox.table.display}`)
      }
    },
    async purgeInbox(req) {
      const sql = postgresInboxStatements(req.table)
      const rows = await query('inbox purge', sql.purgeBatch, [req.consumer, req.olderThanMs, req.limit])
      return Number(rows[0]?.n ?? 0)
    },
    async inboxStats(req) {
      const rows = await query('inbox stats', postgresInboxStatements(req.table).stats, [req.consumer])
      return inboxStatsRowFrom(rows[0])
    },
  }
}
