import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { outboxStats } from '@outboxkit/core'
import { createDashboard } from '@outboxkit/dashboard'
import type { Command } from '../command.js'
import { UsageError } from '../usage.js'

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost'])

function portOf(text: string): number {
  const port = Number(text)
  if (!/^\d+$/.test(text) || port > 65_535) {
    throw new UsageError(
      `--port must be a port number from 0 to 65535, got ${JSON.stringify(text)}.`,
      'dashboard',
    )
  }
  return port
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve(server.address() as AddressInfo)
    })
  })
}

/** Resolves on the first SIGINT or SIGTERM (Ctrl-C, `kill`). */
function stopSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string) => {
      process.off('SIGINT', on)
      process.off('SIGTERM', on)
      resolve(signal)
    }
    process.once('SIGINT', on)
    process.once('SIGTERM', on)
  })
}

/** `outboxkit dashboard`: the dashboard page and API of `DATABASE_URL`'s outbox, until Ctrl-C. */
export const dashboardCommand: Command = {
  name: 'dashboard',
  summary: 'serve the dashboard (page and JSON API) on 127.0.0.1, read-only unless --allow-writes',
  usage: 'outboxkit dashboard [--port <port>] [--host <host>] [--allow-writes] [--table <name>]',
  details: `Serves @outboxkit/dashboard for the outbox of DATABASE_URL: the page at /, the JSON API at
/api/stats, /api/dead?topic=&q=, /api/blocked. Runs until Ctrl-C (SIGINT) or SIGTERM.

Read-only unless --allow-writes: every POST (redrive, discard) answers 403 and changes nothing.
With --allow-writes anyone who reaches the port can redrive and discard dead letters: keep the
default host (this machine only), or put an authenticating proxy in front.

Options:
  --port <port>     the port (default 8080; 0 picks a free one)
  --host <host>     the address to bind (default 127.0.0.1, this machine only)
  --allow-writes    allow Redrive and Discard`,
  options: {
    port: { type: 'string', default: '8080' },
    host: { type: 'string', default: '127.0.0.1' },
    'allow-writes': { type: 'boolean', default: false },
  },
  async run(values, ctx) {
    const port = portOf(values.port as string)
    const host = values.host as string
    const writes = values['allow-writes'] === true
    const backend = await ctx.backend()
    // Fails now, with the CLI's hints, when the server is unreachable or the table is missing.
    await outboxStats(ctx.outbox, backend)
    const dashboard = createDashboard({
      outbox: ctx.outbox,
      backend,
      ...(writes ? { authorize: () => true } : {}),
    })
    const server = createServer(dashboard.node)
    const address = await listen(server, port, host)
    const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
    const url = `http://${shown}:${address.port}/`
    if (writes && !LOOPBACK.has(host)) {
      ctx.io.stderr(
        `outboxkit: warning: --allow-writes on ${host}: anyone who reaches this port can redrive and discard.`,
      )
    }
    ctx.print(
      { url, table: ctx.outbox.table.display, writable: writes },
      () =>
        `dashboard of ${ctx.outbox.table.display} at ${url} (${writes ? 'redrive and discard allowed' : 'read-only'}); Ctrl-C stops it`,
    )
    await stopSignal()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  },
}
