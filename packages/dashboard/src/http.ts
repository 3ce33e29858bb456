import { isOutboxError } from '@outboxkit/core'

// Responses: JSON with the dashboard's security headers, and errors as { error: { code, message } }.

/** Headers on every response: nothing cached, nothing sniffed, never framed, no referrer sent. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
}

/** A JSON response. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...SECURITY_HEADERS, ...headers },
  })
}

/** Error codes of the API, beside the `OutboxError` codes a backend raises. */
export type ApiErrorCode =
  | 'FORBIDDEN'
  | 'READ_ONLY'
  | 'BAD_REQUEST'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'TOO_LARGE'
  | 'METHOD_NOT_ALLOWED'

/** An API error answer: `{ error: { code, message } }`, the message prefixed `[outboxkit] [dashboard]`. */
export function apiError(status: number, code: ApiErrorCode, message: string): Response {
  return json(status, { error: { code, message: `[outboxkit] [dashboard] ${message}` } })
}

/** A failure of the database or the admin API as a response: 400 for bad input, else 500. */
export function failure(error: unknown): Response {
  if (isOutboxError(error)) {
    const status = error.code === 'INVALID_CONFIG' ? 400 : 500
    return json(status, { error: { code: error.code, message: error.message } })
  }
  const message = error instanceof Error ? error.message : String(error)
  return json(500, { error: { code: 'INTERNAL', message: `[outboxkit] [dashboard] ${message}` } })
}
