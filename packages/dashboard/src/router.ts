import { actOnMatching, actOnOne, listDeadRoute } from './api/dead.js'
import { blockedRoute, statsRoute } from './api/stats.js'
import { apiError, failure } from './http.js'
import type { DashboardConfig } from './options.js'
import { pageResponse } from './page/html.js'
import { mayWrite, readJsonBody, refuseWrite } from './security.js'

/** The path below the base path (`''` for the page), or `undefined` when the request is not the dashboard's. */
export function subPath(basePath: string, pathname: string): string | undefined {
  if (pathname === basePath || pathname === `${basePath}/`) return ''
  if (!pathname.startsWith(`${basePath}/`)) return undefined
  return pathname.slice(basePath.length)
}

function methodNotAllowed(allowed: string): Response {
  const response = apiError(405, 'METHOD_NOT_ALLOWED', `use ${allowed} here.`)
  response.headers.set('allow', allowed)
  return response
}

async function get(config: DashboardConfig, request: Request, path: string, url: URL): Promise<Response> {
  switch (path) {
    case '':
      return pageResponse(config.basePath, await mayWrite(config, request))
    case '/api/stats':
      return statsRoute(config, await mayWrite(config, request))
    case '/api/blocked':
      return blockedRoute(config)
    case '/api/dead':
      return listDeadRoute(config, url.searchParams)
    default:
      return apiError(
        404,
        'NOT_FOUND',
        `no dashboard route ${path}; see /api/stats, /api/dead, /api/blocked.`,
      )
  }
}

const ONE = /^\/api\/dead\/([^/]+)\/(redrive|discard)$/
const BULK = /^\/api\/dead\/(redrive|discard)$/

async function post(config: DashboardConfig, request: Request, path: string): Promise<Response> {
  const one = ONE.exec(path)
  const bulk = BULK.exec(path)
  if (!one && !bulk) {
    return apiError(
      404,
      'NOT_FOUND',
      `no dashboard action ${path}; POST /api/dead/{id}/redrive or /api/dead/{id}/discard.`,
    )
  }
  const refused = await refuseWrite(config, request)
  if (refused) return refused
  const body = await readJsonBody(request)
  if (body instanceof Response) return body
  if (one) return actOnOne(config, decodeURIComponent(one[1]!), one[2] as 'redrive' | 'discard')
  return actOnMatching(config, body, bulk![1] as 'redrive' | 'discard')
}

/**
 * Answers a request to the dashboard, or `undefined` when its path is not under the base path
 * (the Node handler then passes it on).
 */
export async function route(config: DashboardConfig, request: Request): Promise<Response | undefined> {
  const url = new URL(request.url)
  const path = subPath(config.basePath, url.pathname)
  if (path === undefined) return undefined
  try {
    if (request.method === 'GET' || request.method === 'HEAD') {
      const response = await get(config, request, path, url)
      return request.method === 'HEAD' ? new Response(null, response) : response
    }
    if (request.method === 'POST') return await post(config, request, path)
    return methodNotAllowed(path.startsWith('/api/dead/') ? 'POST' : 'GET, HEAD')
  } catch (error) {
    return failure(error)
  }
}
