export { type PgliteDatabase, pgliteBackend } from './backend.js'
export { type PgliteTransaction, processOnce, publish, publishMany } from './publish.js'
