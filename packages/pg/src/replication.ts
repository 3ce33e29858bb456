import type { ReplicationConnection, ReplicationHandlers } from '@outboxkit/core/adapter'
import pg from 'pg'
import { deadline } from './deadline.js'

/** The slice of node-postgres' `Connection` a replication stream uses (pg's public `client.connection`). */
interface PgWireConnection {
  on(event: 'copyData', listener: (msg: { chunk: Buffer }) => void): void
  once(event: 'replicationStart', listener: () => void): void
  sendCopyFromChunk(chunk: Buffer): void
  readonly stream: { pause(): void; resume(): void }
}

/**
 * Opens a `replication=database` connection with node-postgres, sends `command`
 * (START_REPLICATION) and resolves once the server streams (CopyBoth). CopyData messages go to
 * `handlers.onData`; the end of the stream or of the connection to `handlers.onEnd`. Rejects with
 * the server's error (`code` is its SQLSTATE: `55006` when another reader holds the slot).
 */
export async function replicateWithPg(
  config: pg.ClientConfig,
  command: string,
  handlers: ReplicationHandlers,
  timeoutMs: number | undefined,
): Promise<ReplicationConnection> {
  const client = new pg.Client({ ...config, replication: 'database', keepAlive: true } as pg.ClientConfig)
  let started = false
  let ended = false
  const end = (error?: unknown) => {
    if (ended) return
    ended = true
    handlers.onEnd(error)
  }
  client.on('error', (error) => end(error))
  client.on('end', () => end(new Error('the replication connection ended')))
  await deadline(client.connect(), timeoutMs, 'the replication connection').catch(async (err) => {
    await client.end().catch(() => {})
    throw err
  })
  const wire = (client as unknown as { connection: PgWireConnection }).connection
  wire.on('copyData', (msg) => handlers.onData(msg.chunk))
  return new Promise<ReplicationConnection>((resolve, reject) => {
    wire.once('replicationStart', () => {
      started = true
      resolve({
        send: (chunk) => wire.sendCopyFromChunk(chunk),
        pause: () => wire.stream.pause(),
        resume: () => wire.stream.resume(),
        async close() {
          ended = true
          await client.end().catch(() => {})
        },
      })
    })
    client.query(command).then(
      () => end(),
      async (err: unknown) => {
        if (started) return end(err)
        ended = true
        await client.end().catch(() => {})
        reject(err)
      },
    )
  })
}
