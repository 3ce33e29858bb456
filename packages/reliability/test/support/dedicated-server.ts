import { afterAll, beforeAll } from 'vitest'

/** A server of its own for a test file: where it listens, and how it goes away. */
export interface DedicatedServer {
  url: string
  destroy(): Promise<void>
}

/** What {@link useDedicatedServer} started and opened, once its `beforeAll` has run. */
export interface DedicatedServerInFile<S extends DedicatedServer, R> {
  server(): S
  opened(): R
}

/**
 * Why the dedicated server cannot run here (`undefined`: it can), as `unavailable` says it; a
 * reason is also printed as "[reliability] `scenario` skipped: ...".
 */
export async function skippedBecause(
  scenario: string,
  unavailable: () => Promise<string | undefined>,
): Promise<string | undefined> {
  const reason = await unavailable()
  if (reason) console.warn(`[reliability] ${scenario} skipped: ${reason}`)
  return reason
}

/**
 * A dedicated server for the tests of a `describe`: started before them (with `open` run on it:
 * a ledger database, a world), closed and destroyed after them, each step on a generous bound.
 */
export function useDedicatedServer<S extends DedicatedServer, R extends { close(): Promise<unknown> }>(
  start: () => Promise<S>,
  open: (server: S) => R | Promise<R>,
): DedicatedServerInFile<S, R> {
  let server: S | undefined
  let opened: R | undefined
  beforeAll(async () => {
    server = await start()
    opened = await open(server)
  }, 120_000)
  afterAll(async () => {
    await opened?.close().catch(() => {})
    await server?.destroy()
  }, 60_000)
  return { server: () => server!, opened: () => opened! }
}
