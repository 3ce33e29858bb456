import type { Duplex } from 'node:stream'
import type { ReplicationConnection, ReplicationHandlers } from '@outboxkit/core/adapter'
import postgres from 'postgres'
import { settleWithin, withDeadline } from './deadline.js'

/** How long `close` waits for the server to end the copy before it drops the socket. */
const CLOSE_WAIT_MS = 1_000

/**
 * The options of a one-connection `replication=database` sql made from `base`'s parsed options
 * (postgres.js' own `sql.options`, as its `subscribe` does): its host, port, user, password, TLS and
 * startup parameters, with no type fetch, no prepared statement, no idle or lifetime end, and
 * NOTICEs silenced.
 */
function replicationOptions(base: postgres.Sql<any>, timeoutMs: number | undefined): postgres.Options<{}> {
  const parsed = base.options as unknown as Record<string, unknown> & { connection?: Record<string, unknown> }
  return {
    ...parsed,
    // A fresh `shared` (retries, type cache): nothing is shared with the caller's sql.
    shared: { retries: 0, typeArrayMap: {} },
    max: 1,
    prepare: false,
    fetch_types: false,
    idle_timeout: null,
    max_lifetime: null,
    onclose: undefined,
    onnotice: () => {},
    ...(timeoutMs === undefined ? {} : { connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)) }),
    connection: { ...parsed.connection, replication: 'database' },
  } as unknown as postgres.Options<{}>
}

/**
 * Opens a `replication=database` connection with postgres.js (with the connection options of
 * `base`: give the backend a direct `listen` sql behind a pooler), sends `command`
 * (START_REPLICATION) and resolves once the server streams (CopyBoth, a Duplex stream of
 * postgres.js). CopyData messages go to `handlers.onData`; the end of the stream or of the
 * connection to `handlers.onEnd`. Rejects with the server's error (`code` is its SQLSTATE:
 * `55006` when another reader holds the slot).
 */
export async function replicateWithPostgresJs(
  base: postgres.Sql<any>,
  command: string,
  handlers: ReplicationHandlers,
  timeoutMs: number | undefined,
): Promise<ReplicationConnection> {
  const sql = postgres(replicationOptions(base, timeoutMs))
  let ended = false
  const end = (error?: unknown) => {
    if (ended) return
    ended = true
    // The stream is over: its connection too (the relay reads the slot again on a new one).
    sql.end({ timeout: 0 }).catch(() => {})
    handlers.onEnd(error)
  }
  let stream: Duplex
  try {
    stream = (await withDeadline(
      sql.unsafe(command).writable() as unknown as Promise<Duplex> & { cancel(): unknown },
      timeoutMs,
      'the replication connection',
    )) as Duplex
  } catch (err) {
    ended = true
    await sql.end({ timeout: 0 }).catch(() => {})
    throw err
  }
  stream.on('data', (chunk: Buffer) => handlers.onData(chunk))
  stream.on('error', (error) => end(error))
  stream.on('end', () => end(new Error('the server ended the replication stream')))
  stream.on('close', () => end(new Error('the replication connection ended')))
  return {
    send: (chunk) => void stream.write(chunk),
    pause: () => void stream.pause(),
    resume: () => void stream.resume(),
    async close() {
      ended = true
      // CopyDone: the server ends the copy (after the last standby update written before it).
      const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()))
      stream.end()
      await settleWithin(closed, CLOSE_WAIT_MS)
      await sql.end({ timeout: CLOSE_WAIT_MS / 1000 }).catch(() => {})
    },
  }
}
