import net from 'node:net'
import { afterAll, afterEach, beforeAll } from 'vitest'

/**
 * A TCP proxy between the code under test and a database server or broker that can freeze: while paused it
 * reads nothing from either side (bytes pile up in the kernel buffers, exactly like a network that
 * stopped delivering packets), so the client sees silence, not an error.
 */
export interface PausableProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number
  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string
  /** Stops moving bytes, in both directions, on every connection (open or new). */
  pause(): void
  /** Moves bytes again; held data flows in order. */
  resume(): void
  readonly paused: boolean
  /**
   * Cuts the path: destroys every open connection (the client sees a reset) and, with
   * `refuse`, refuses new ones until {@link PausableProxy.heal} (a server gone away).
   */
  cut(options?: { refuse?: boolean }): void
  /** Accepts connections again after a `cut({ refuse: true })`. */
  heal(): void
  /** Connections accepted so far. */
  readonly accepted: number
  /** Destroys every connection and stops listening. */
  close(): Promise<void>
}

/**
 * Starts a {@link PausableProxy} on 127.0.0.1 forwarding to `target`. Pausing uses socket
 * back-pressure (`socket.pause()` on every socket) rather than buffering in the proxy, so nothing
 * is lost or reordered on resume.
 */
export async function startPausableProxy(target: { host: string; port: number }): Promise<PausableProxy> {
  let paused = false
  let refusing = false
  let accepted = 0
  const sockets = new Set<net.Socket>()
  const track = (s: net.Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => {})
    if (paused) s.pause()
  }
  const server = net.createServer((client) => {
    if (refusing) {
      client.destroy()
      return
    }
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
    cut({ refuse = false } = {}) {
      refusing = refuse
      for (const s of sockets) s.destroy()
    },
    heal() {
      refusing = false
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

/** What {@link usePausableProxy} gives a test file: the proxy's controls once it is started. */
export interface ProxyInFile {
  /** The server's URL pointing at the proxy (read it inside tests or hooks). */
  readonly url: string
  pause(): void
  resume(): void
}

/**
 * A {@link PausableProxy} in front of the server of `url` (`defaultPort` when the URL has none) for
 * the file or `describe` it is called in: started before all tests, resumed after each, closed
 * after all. Vitest runs after-hooks in reverse order, so call this after registering the hooks
 * that close connections through the proxy: it is resumed before they run.
 */
export function usePausableProxy(url: string, defaultPort: number): ProxyInFile {
  let proxy: PausableProxy | undefined
  let proxyUrl: string | undefined
  const started = () => {
    if (!proxy) throw new Error('the proxy starts in beforeAll: use it inside tests or hooks')
    return proxy
  }
  beforeAll(async () => {
    const target = new URL(url)
    proxy = await startPausableProxy({ host: target.hostname, port: Number(target.port || defaultPort) })
    proxyUrl = proxy.urlFor(url)
  })
  afterEach(() => proxy?.resume())
  afterAll(() => proxy?.close())
  return {
    get url() {
      started()
      return proxyUrl!
    },
    pause: () => started().pause(),
    resume: () => started().resume(),
  }
}
