// A broker server the test owns (a nats-server, a redis-server): a process of its own on a free
// port, which the test stops and starts again on the same port and data directory, touching no
// shared server.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A TCP port nothing listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** Resolves once something accepts TCP connections on `port`, within `timeoutMs`. */
export async function portAccepts(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port })
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (ok) return
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** A server process of the test, see {@link startServerProcess}. */
export interface ServerProcess {
  readonly port: number
  /** Its data directory (removed by {@link ServerProcess.remove}). */
  readonly dir: string
  /** Stops it (SIGKILL by default: a crash) and resolves once the process exited. */
  stop(signal?: NodeJS.Signals): Promise<void>
  /** Starts it again, same port, same arguments; resolves once it accepts connections. */
  start(): Promise<void>
  /** Stops it and removes its data directory. */
  remove(): Promise<void>
}

/**
 * Starts `command` with the arguments `args(port, dir)` on a free port and a fresh temporary data
 * directory; resolves once it accepts TCP connections. Its output is discarded.
 */
export async function startServerProcess(
  command: string,
  args: (port: number, dir: string) => string[],
): Promise<ServerProcess> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'outboxkit-server-'))
  let child: ChildProcess | undefined
  const stop = async (signal: NodeJS.Signals = 'SIGKILL') => {
    const running = child
    child = undefined
    if (!running || running.exitCode !== null || running.signalCode !== null) return
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()))
    running.kill(signal)
    await exited
  }
  const start = async () => {
    if (child) throw new Error(`${command} on port ${port} already runs`)
    child = spawn(command, args(port, dir), { stdio: 'ignore' })
    const started = child
    const early = new Promise<never>((_, reject) =>
      started.once('exit', (code) => reject(new Error(`${command} exited with ${code} on port ${port}`))),
    )
    early.catch(() => {})
    await Promise.race([portAccepts(port), early])
  }
  await start()
  return {
    port,
    dir,
    stop,
    start,
    async remove() {
      await stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
