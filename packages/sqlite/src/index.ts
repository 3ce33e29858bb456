export { type SqliteBackendOptions, sqliteBackend } from './backend.js'
export { isSqliteDatabase, type SqliteDatabase } from './database.js'
export { inboxHandler } from './inbox-handler.js'
export { processOnce, publish, publishMany } from './publish.js'
