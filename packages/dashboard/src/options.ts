import { type Outbox, type OutboxBackend, OutboxError } from '@outboxkit/core'

/** Options of {@link createDashboard}. */
export interface DashboardOptions {
  /** The outbox to show (its table). */
  outbox: Outbox<any>
  /** The backend to read and act through: `pgBackend(...)`, `mysqlBackend(...)`, `sqliteBackend(...)`, ... */
  backend: OutboxBackend
  /**
   * Where the dashboard is mounted: the page at `basePath`, the API at `{basePath}/api/...`.
   * Starts with `/`, no trailing slash (`'/outbox'`).
   * @defaultValue `''` (the root)
   */
  basePath?: string
  /**
   * Decides whether a request may act (redrive, discard). Without it the dashboard is read-only:
   * every POST answers 403 and changes nothing. It is asked for every POST, and for every page
   * and `GET /api/stats` to tell the page whether to show the buttons (the server enforces it
   * either way). Reads are not gated by it: mount the dashboard behind your own authentication.
   * @defaultValue none: read-only
   */
  authorize?: (request: Request) => boolean | Promise<boolean>
  /**
   * Origins, besides the dashboard's own, whose POSTs are accepted (e.g. `'https://admin.example.com'`
   * behind a proxy that rewrites the Host).
   * @defaultValue none: only the dashboard's own origin
   */
  allowedOrigins?: readonly string[]
}

/** The checked options. */
export interface DashboardConfig {
  readonly outbox: Outbox<any>
  readonly backend: OutboxBackend
  readonly basePath: string
  readonly authorize: ((request: Request) => boolean | Promise<boolean>) | undefined
  readonly allowedOrigins: ReadonlySet<string>
}

const KNOWN = new Set(['outbox', 'backend', 'basePath', 'authorize', 'allowedOrigins'])

function invalid(message: string): OutboxError {
  return new OutboxError('INVALID_CONFIG', message, { source: 'dashboard' })
}

/** Checks {@link DashboardOptions}; throws `INVALID_CONFIG` with what to pass instead. */
export function dashboardConfig(options: DashboardOptions): DashboardConfig {
  if (!options || typeof options !== 'object') {
    throw invalid('createDashboard needs { outbox, backend }, e.g. createDashboard({ outbox, backend }).')
  }
  for (const name of Object.keys(options)) {
    if (!KNOWN.has(name)) {
      throw invalid(`createDashboard has no option ${JSON.stringify(name)}; known: ${[...KNOWN].join(', ')}.`)
    }
  }
  const { outbox, backend } = options
  if (!outbox || typeof outbox !== 'object' || !('table' in outbox)) {
    throw invalid('createDashboard outbox must be the value of defineOutbox(...).')
  }
  if (!backend || typeof backend.claim !== 'function' || typeof backend.redrive !== 'function') {
    throw invalid('createDashboard backend must be an OutboxBackend, e.g. pgBackend({ connectionString }).')
  }
  if (typeof backend.stats !== 'function' || typeof backend.listDead !== 'function') {
    throw invalid(`createDashboard needs a backend that can list (stats, listDead); ${backend.name} cannot.`)
  }
  if (options.authorize !== undefined && typeof options.authorize !== 'function') {
    throw invalid('createDashboard authorize must be a function (request) => boolean | Promise<boolean>.')
  }
  return {
    outbox,
    backend,
    basePath: basePathOf(options.basePath),
    authorize: options.authorize,
    allowedOrigins: originsOf(options.allowedOrigins),
  }
}

function basePathOf(value: unknown): string {
  if (value === undefined || value === '' || value === '/') return ''
  if (typeof value !== 'string' || !/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$/.test(value)) {
    throw invalid(
      `createDashboard basePath must be a path like '/outbox' (starting with '/', no trailing '/', no query), got ${JSON.stringify(value)}.`,
    )
  }
  return value
}

function originsOf(value: unknown): ReadonlySet<string> {
  if (value === undefined) return new Set()
  if (!Array.isArray(value)) throw invalid('createDashboard allowedOrigins must be an array of origins.')
  return new Set(
    value.map((o) => {
      try {
        const origin = new URL(String(o)).origin
        if (origin === 'null') throw new Error('opaque')
        return origin
      } catch {
        throw invalid(
          `createDashboard allowedOrigins: ${JSON.stringify(o)} is not an origin like 'https://admin.example.com'.`,
        )
      }
    }),
  )
}
