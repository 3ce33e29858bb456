export { type BackendContext, type BackendHarness, runBackendConformance } from './backend-suite.js'
export { type Inspector, serverInspector, testDatabaseUrl, uniqueTableName, waitFor } from './database.js'
export {
  type PublishContext,
  type PublishHarness,
  type RefusedHandle,
  runPublishConformance,
} from './publish-suite.js'
