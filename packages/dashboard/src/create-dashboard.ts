import { apiError } from './http.js'
import { type NodeHandler, nodeHandler } from './node-handler.js'
import { type DashboardOptions, dashboardConfig } from './options.js'
import { route } from './router.js'

/** What {@link createDashboard} returns: the same dashboard as a Web and as a Node handler. */
export interface Dashboard {
  /**
   * The Web-standard handler (Hono, Next.js route handlers, Bun, Deno): answers every request;
   * a path outside the base path gets a 404.
   */
  fetch(request: Request): Promise<Response>
  /**
   * The Node handler (node:http, Express, Fastify's `reply.raw`): `(req, res, next?)`. A path
   * outside the base path is passed to `next` when given (Express), else answered 404.
   */
  readonly node: NodeHandler
  /** The base path it is mounted at (`''` for the root). */
  readonly basePath: string
}

/**
 * Creates the dashboard of an outbox: the page at `basePath`, the JSON API at
 * `{basePath}/api/stats`, `/api/dead?topic=&q=`, `/api/blocked`, and the actions
 * `POST {basePath}/api/dead/{id}/redrive` and `/discard` (one message) or
 * `POST {basePath}/api/dead/redrive` and `/discard` with `{ topic, q, expected }` (a search result).
 *
 * Without `authorize` it is read-only: every POST answers 403 and changes nothing. A POST whose
 * `Origin` is not the dashboard's own answers 403. Data is shown as text, never as HTML.
 *
 * @example
 * ```ts
 * const dashboard = createDashboard({ outbox, backend, basePath: '/outbox', authorize: async (req) => isAdmin(req) })
 * app.use('/outbox', dashboard.node) // Express
 * ```
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const config = dashboardConfig(options)
  const fetch = async (request: Request): Promise<Response> =>
    (await route(config, request)) ??
    apiError(404, 'NOT_FOUND', `not a dashboard path: the dashboard is at ${config.basePath || '/'}.`)
  return { fetch, node: nodeHandler((request) => route(config, request)), basePath: config.basePath }
}
