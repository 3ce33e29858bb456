// @outboxkit/dashboard: a page and a JSON API for an outbox, as a Web and a Node handler.
export { createDashboard, type Dashboard } from './create-dashboard.js'
export type { ApiErrorCode } from './http.js'
export type { NodeHandler, NodeRequest } from './node-handler.js'
export type { DashboardOptions } from './options.js'
