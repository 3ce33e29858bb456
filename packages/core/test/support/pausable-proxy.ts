import net from 'node:net'

/** A TCP proxy in front of PostgreSQL that can stop forwarding bytes, like a frozen network. */
export interface PausableProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number
  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string
  /** Stops forwarding bytes in both directions (connections stay open; new ones are accepted). */
  pause(): void
  /** Forwards again, flushing what was held back on connections that are still open on both sides. */
  resume(): void
  /** Connections currently open through the proxy. */
  readonly connections: number
  /** Destroys every connection and stops listening. */
  close(): Promise<void>
}

interface Pair {
  readonly client: net.Socket
  readonly upstream: net.Socket
  readonly toUpstream: Buffer[]
  readonly toClient: Buffer[]
}

/**
 * Starts a {@link PausableProxy} on 127.0.0.1 forwarding to `target`. While paused, bytes read
 * from either side are held back; a side that closes while paused takes the other side down
 * without flushing, as if its packets had been lost.
 */
export async function startPausableProxy(target: { host: string; port: number }): Promise<PausableProxy> {
  let paused = false
  const pairs = new Set<Pair>()

  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host)
    const pair: Pair = { client, upstream, toUpstream: [], toClient: [] }
    pairs.add(pair)
    const forward = (from: net.Socket, to: net.Socket, held: Buffer[]) => {
      from.on('data', (chunk: Buffer) => {
        if (paused || held.length > 0) held.push(chunk)
        else to.write(chunk)
      })
      from.on('close', () => {
        pairs.delete(pair)
        if (paused || held.length > 0) to.destroy()
        else to.end()
      })
      from.on('error', () => {})
    }
    forward(client, upstream, pair.toUpstream)
    forward(upstream, client, pair.toClient)
  })
  server.on('error', () => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port

  return {
    port,
    urlFor(url) {
      const u = new URL(url)
      u.hostname = '127.0.0.1'
      u.port = String(port)
      return u.toString()
    },
    pause() {
      paused = true
    },
    resume() {
      paused = false
      for (const pair of pairs) {
        for (const [held, to] of [
          [pair.toUpstream, pair.upstream],
          [pair.toClient, pair.client],
        ] as const) {
          for (const chunk of held.splice(0)) to.write(chunk)
        }
      }
    },
    get connections() {
      return pairs.size
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy()
        pair.upstream.destroy()
      }
      pairs.clear()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
