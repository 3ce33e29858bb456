export { type PgliteDatabase, pgliteBackend } from './backend.js'
export { inboxHandler } from './inbox-handler.js'
export { type PgliteTransaction, processOnce, publish, publishMany } from './publish.js'
