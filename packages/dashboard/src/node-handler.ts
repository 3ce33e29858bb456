import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { apiError } from './http.js'

/** The slice of `node:http`'s request the dashboard reads (Express and Fastify's `req.raw` are ones). */
export type NodeRequest = IncomingMessage & { originalUrl?: string; body?: unknown }

/** A Node `(req, res, next?)` handler. */
export type NodeHandler = (req: NodeRequest, res: ServerResponse, next?: (error?: unknown) => void) => void

/**
 * The request as a Web `Request`. The URL is `req.originalUrl` (Express keeps the mount path
 * there) or `req.url`, on the `Host` the client sent; a body a framework already parsed is
 * passed on as JSON.
 */
export function toWebRequest(req: NodeRequest): Request {
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true
  const host = req.headers.host ?? 'localhost'
  const url = new URL(req.originalUrl ?? req.url ?? '/', `${secure ? 'https' : 'http'}://${host}`)
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  const method = req.method ?? 'GET'
  if (method === 'GET' || method === 'HEAD') return new Request(url, { method, headers })
  const parsed = req.body !== undefined && req.readableEnded
  if (parsed) headers.delete('content-length')
  const body = parsed
    ? JSON.stringify(req.body)
    : (Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>)
  return new Request(url, { method, headers, body, duplex: 'half' } as RequestInit)
}

/** Writes a Web `Response` to a Node response. */
export async function writeWebResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    headers[name] = value
  })
  const body = response.body ? Buffer.from(await response.arrayBuffer()) : undefined
  res.writeHead(response.status, headers)
  res.end(body)
}

/** A Node handler around `answer`, which returns `undefined` for a path that is not its own. */
export function nodeHandler(answer: (request: Request) => Promise<Response | undefined>): NodeHandler {
  return (req, res, next) => {
    void (async () => {
      const response = await answer(toWebRequest(req))
      if (response === undefined && next) return next()
      await writeWebResponse(response ?? apiError(404, 'NOT_FOUND', 'not a dashboard path.'), res)
    })().catch((error: unknown) => {
      if (next) return next(error)
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
      res.end('[outboxkit] [dashboard] internal error')
    })
  }
}
