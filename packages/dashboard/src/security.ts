import { apiError } from './http.js'
import type { DashboardConfig } from './options.js'

// The write gate: read-only without `authorize`, same-origin POSTs only, and bounded bodies.

/** The largest POST body accepted, in bytes (a bulk action's filters). */
export const MAX_BODY_BYTES = 4096

/**
 * True when the request may come from the dashboard's own page: its `Origin` (when sent) is the
 * request's own origin or an allowed one, and a browser's `Sec-Fetch-Site` (when sent) says it
 * is same-origin. Scripts that send neither (curl) pass; browsers always send `Origin` on POST.
 */
export function sameOrigin(config: DashboardConfig, request: Request): boolean {
  const origin = request.headers.get('origin')
  if (origin !== null) {
    if (origin !== new URL(request.url).origin && !config.allowedOrigins.has(origin)) return false
  }
  const site = request.headers.get('sec-fetch-site')
  return (
    site === null ||
    site === 'same-origin' ||
    site === 'none' ||
    (origin !== null && config.allowedOrigins.has(origin))
  )
}

/** What `authorize` answers for this request; `false` without it, or when it throws. */
export async function mayWrite(config: DashboardConfig, request: Request): Promise<boolean> {
  if (!config.authorize) return false
  try {
    return (await config.authorize(request)) === true
  } catch {
    return false
  }
}

/** `undefined` when the POST may act; else the 403 that refuses it (nothing has been changed). */
export async function refuseWrite(config: DashboardConfig, request: Request): Promise<Response | undefined> {
  if (!config.authorize) {
    return apiError(
      403,
      'READ_ONLY',
      'this dashboard is read-only: nothing was changed. Pass createDashboard({ authorize }) to allow redrive and discard (the CLI: outboxkit dashboard --allow-writes).',
    )
  }
  if (!sameOrigin(config, request)) {
    return apiError(
      403,
      'FORBIDDEN',
      `a POST from origin ${JSON.stringify(request.headers.get('origin'))} is refused (cross-site request): nothing was changed. Act from the dashboard's own page, or list the origin in allowedOrigins.`,
    )
  }
  if (!(await mayWrite(config, request))) {
    return apiError(403, 'FORBIDDEN', 'authorize refused this request: nothing was changed.')
  }
  return undefined
}

/**
 * The request's body as JSON (an object), at most {@link MAX_BODY_BYTES}; an empty body is `{}`.
 * Returns a 413 or 400 response instead when it is too large or not a JSON object.
 */
export async function readJsonBody(request: Request): Promise<Record<string, unknown> | Response> {
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > MAX_BODY_BYTES) return tooLarge()
  const chunks: Uint8Array[] = []
  let size = 0
  if (request.body) {
    const reader = request.body.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > MAX_BODY_BYTES) {
        await reader.cancel().catch(() => {})
        return tooLarge()
      }
      chunks.push(value)
    }
  }
  const text = Buffer.concat(chunks).toString('utf8').trim()
  if (text === '') return {}
  try {
    const value: unknown = JSON.parse(text)
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>
  } catch {}
  return apiError(400, 'BAD_REQUEST', 'the body must be a JSON object, e.g. {"q":"timeout","expected":3}.')
}

function tooLarge(): Response {
  return apiError(413, 'TOO_LARGE', `the body is larger than ${MAX_BODY_BYTES} bytes.`)
}
