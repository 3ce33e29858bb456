import { OutboxError } from '@outboxkit/core'
import { ADAPTER } from './transaction.js'

/** A postgres.js pending query, seen only through what {@link withDeadline} uses. */
interface PendingQuery<T> extends PromiseLike<T> {
  cancel(): unknown
}

/**
 * Cancels `query` on the server, best effort, without ever leaving a rejected promise unhandled.
 *
 * `query.cancel()` drops the promise of its CancelRequest connection: when the server refuses that
 * connection (ECONNREFUSED, EHOSTUNREACH while the network is down) the rejection is unhandled and
 * Node ends the process. So the query's own canceller is called and its promise caught; when
 * postgres.js does not have it (another version), nothing is cancelled and the deadline still holds.
 */
function cancelQuietly(query: PendingQuery<unknown>): void {
  const q = query as unknown as { canceller?: ((q: unknown) => Promise<unknown>) | null }
  const canceller = q.canceller
  if (typeof canceller !== 'function') return
  q.canceller = null
  try {
    canceller(q).catch(() => {})
  } catch {
    // A synchronous failure to cancel changes nothing: the deadline already fired.
  }
}

/** postgres.js' own connect timeout (`connect_timeout`) reported as a TIMEOUT. */
export function mapConnectTimeout(error: unknown, what: string): unknown {
  if ((error as { code?: unknown } | null)?.code !== 'CONNECT_TIMEOUT') return error
  return new OutboxError(
    'TIMEOUT',
    `${what} could not connect to PostgreSQL within connect_timeout (${(error as Error).message}). Check that the server is reachable.`,
    { cause: error, source: ADAPTER },
  )
}

/**
 * Settles with `query`, or rejects with `OutboxError('TIMEOUT')` once `ms` have passed; the query
 * is then cancelled (it may still be waiting for a connection, or running on the server) so that
 * it does not apply later. postgres.js has no per-query timeout of its own.
 */
export function withDeadline<T>(query: PendingQuery<T>, ms: number | undefined, what: string): Promise<T> {
  if (ms === undefined) {
    return Promise.resolve(query).catch((err: unknown) => {
      throw mapConnectTimeout(err, what)
    })
  }
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(
        new OutboxError(
          'TIMEOUT',
          `${what} did not answer within ${ms} ms (commandTimeoutMs). Check that PostgreSQL is reachable and not overloaded or locked; the relay retries with backoff.`,
          { source: ADAPTER },
        ),
      )
      cancelQuietly(query)
    }, ms)
    query.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (err: unknown) => {
        clearTimeout(timer)
        reject(mapConnectTimeout(err, what))
      },
    )
  })
}

/** Resolves with `promise`, or with `undefined` after `ms` (never rejects). For best-effort cleanup. */
export function settleWithin<T>(promise: PromiseLike<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    Promise.resolve(promise).catch(() => undefined),
    new Promise<undefined>((r) => {
      timer = setTimeout(() => r(undefined), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}
