import { type OutboxBackend, OutboxError } from '@outboxkit/core'
import { assertKnownOptions, createPostgresBackend, formatValue } from '@outboxkit/core/adapter'

/** The slice of a PGlite instance the relay backend needs. */
export interface PgliteDatabase {
  query<T>(query: string, params?: unknown[]): Promise<{ rows: T[] }>
  exec(query: string): Promise<unknown>
  listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>>
  transaction: unknown
}

/**
 * The relay backend for PGlite. The database stays yours: `relay.stop()` does not close it.
 * PGlite is one connection, so claims, settles and your transactions take turns; LISTEN/NOTIFY
 * works in-process, so delivery starts right after a commit.
 *
 * @example
 * ```ts
 * const db = await PGlite.create()
 * const backend = pgliteBackend(db)
 * await migrate(outbox, backend)
 * ```
 * @param db - the PGlite instance; `pgliteBackend` takes no options (PGlite runs in-process, so
 * there is no connection to bound or configure), and refuses a second argument
 * @throws OutboxError `INVALID_CONFIG` when `db` is not a PGlite instance, or for a second
 * argument (an option of another backend, such as `commandTimeoutMs`).
 */
export function pgliteBackend(db: PgliteDatabase, ...unexpected: []): OutboxBackend {
  const extra = (unexpected as unknown[])[0]
  if (extra !== undefined) {
    const what = 'pgliteBackend(db)'
    assertKnownOptions(extra, [], {
      source: 'pglite',
      what,
      valid: `none: ${what} takes no options (PGlite runs in-process: there is no connection to bound or configure)`,
    })
    if (extra === null || typeof extra !== 'object') {
      throw new OutboxError(
        'INVALID_CONFIG',
        `pgliteBackend takes only the PGlite instance, got a second argument: ${formatValue(extra)}.`,
        { source: 'pglite' },
      )
    }
  }
  if (
    !db ||
    typeof db.query !== 'function' ||
    typeof db.exec !== 'function' ||
    typeof db.listen !== 'function'
  ) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `pgliteBackend expects a PGlite instance, got ${formatValue(db)}.`,
      {
        source: 'pglite',
      },
    )
  }
  return createPostgresBackend({
    name: 'pglite',
    async query(text, params) {
      return (await db.query<Record<string, unknown>>(text, params as unknown[])).rows
    },
    async exec(script) {
      await db.exec(`BEGIN;\n${script};\nCOMMIT`)
    },
    async listen(channel, handlers) {
      const unlisten = await db.listen(channel, () => handlers.onWake())
      handlers.onConnect?.()
      return { close: () => unlisten() }
    },
    async close() {},
  })
}
