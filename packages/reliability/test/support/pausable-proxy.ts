import net from 'node:net'

/**
 * A TCP proxy between the code under test and PostgreSQL that can freeze: while paused it reads
 * nothing from either side (bytes pile up in the kernel buffers, exactly like a network that
 * stopped delivering packets), so the client sees silence, not an error.
 */
export interface FreezableProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number
  /** `url` pointing at the proxy instead of the server. */
  urlFor(url: string): string
  /** Stops moving bytes, in both directions, on every connection (open or new). */
  pause(): void
  /** Moves bytes again; held data flows in order. */
  resume(): void
  readonly paused: boolean
  /** Connections accepted so far. */
  readonly accepted: number
  /** Destroys every connection and stops listening. */
  close(): Promise<void>
}

/**
 * Starts a {@link FreezableProxy} to `target`. Pausing uses socket back-pressure (`socket.pause()`
 * on every socket) rather than buffering in the proxy, so nothing is lost or reordered on resume.
 */
export async function startFreezableProxy(target: { host: string; port: number }): Promise<FreezableProxy> {
  let paused = false
  let accepted = 0
  const sockets = new Set<net.Socket>()
  const track = (s: net.Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => {})
    if (paused) s.pause()
  }
  const server = net.createServer((client) => {
    accepted++
    const upstream = net.connect(target.port, target.host)
    track(client)
    track(upstream)
    client.pipe(upstream)
    upstream.pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
    // pipe() resumes the source: re-apply the freeze for connections accepted while paused.
    if (paused) {
      client.pause()
      upstream.pause()
    }
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
      for (const s of sockets) s.pause()
    },
    resume() {
      paused = false
      for (const s of sockets) s.resume()
    },
    get paused() {
      return paused
    },
    get accepted() {
      return accepted
    },
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
