import type { Inbox } from '../../outbox/define-inbox.js'
import { type InboxBackend, inboxStatsRowFrom } from '../../protocol/inbox-backend.js'
import type { MysqlRunner } from './runner.js'
import { mysqlInboxStatements } from './statements/inbox.js'

/** The inbox members of a MySQL/MariaDB backend (see {@link InboxBackend}): one statement each. */
export function mysqlInboxBackend(db: MysqlRunner): Required<InboxBackend> {
  return {
    async migrateInbox(inbox: Inbox) {
      await db.run(`migrate of inbox table ${inbox.table.display}`, mysqlInboxStatements(inbox.table).ddl, [])
    },
    async purgeInbox(req) {
      const sql = mysqlInboxStatements(req.table).purgeBatch
      return db.write('inbox purge', sql, [req.consumer, Math.round(req.olderThanMs * 1000), req.limit])
    },
    async inboxStats(req) {
      const { rows } = await db.run('inbox stats', mysqlInboxStatements(req.table).stats, [req.consumer])
      return inboxStatsRowFrom(rows[0])
    },
  }
}
