import type { Inbox } from '../../outbox/define-inbox.js'
import { type InboxBackend, inboxStatsRowFrom } from '../../protocol/inbox-backend.js'
import type { SqliteExecutor } from './backend.js'
import type { SqliteRunner } from './runner.js'
import { sqliteInboxStatements } from './statements/inbox.js'

/** The inbox members of a SQLite backend (see {@link InboxBackend}): writes hold the write lock. */
export function sqliteInboxBackend(executor: SqliteExecutor, db: SqliteRunner): Required<InboxBackend> {
  return {
    async migrateInbox(inbox: Inbox) {
      await db.write(`migrate of inbox table ${inbox.table.display}`, () =>
        executor.exec(sqliteInboxStatements(inbox.table).ddl),
      )
    },
    async purgeInbox(req) {
      const sql = sqliteInboxStatements(req.table).purgeBatch
      return db.write(
        'inbox purge',
        () => executor.run(sql, [req.consumer, req.olderThanMs, req.limit]).changes,
      )
    },
    async inboxStats(req) {
      const sql = sqliteInboxStatements(req.table).stats
      return inboxStatsRowFrom(db.read('inbox stats', () => executor.all(sql, [req.consumer]))[0])
    },
  }
}
