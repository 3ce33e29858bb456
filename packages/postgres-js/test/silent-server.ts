import net from 'node:net'

/** A TCP server on 127.0.0.1 that accepts connections and never answers: a frozen PostgreSQL. */
export interface SilentServer {
  readonly port: number
  readonly url: string
  /** Connections accepted so far. */
  readonly accepted: number
  close(): Promise<void>
}

/** Starts a {@link SilentServer} on a free port. */
export async function silentServer(): Promise<SilentServer> {
  const sockets = new Set<net.Socket>()
  let accepted = 0
  const server = net.createServer((socket) => {
    accepted++
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/test`,
    get accepted() {
      return accepted
    },
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
