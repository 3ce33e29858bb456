export { type PgliteDatabase, pgliteBackend } from './backend.js'
export { type PgliteTransaction, publish, publishMany } from './publish.js'
