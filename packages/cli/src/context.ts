import { defineOutbox, type Outbox, type OutboxBackend } from '@outboxkit/core'
import { type DatabaseTarget, parseDatabaseUrl } from './database-url.js'
import { openBackend } from './open-backend.js'
import { UsageError } from './usage.js'

/** Where the CLI writes, and what it reads from the environment. */
export interface CliIo {
  /** Writes `text` (a line or more, newline added) to standard output. */
  stdout(text: string): void
  /** Writes `text` (newline added) to standard error. */
  stderr(text: string): void
  /** The environment (`DATABASE_URL`, `OUTBOX_TABLE`). */
  env: Readonly<Record<string, string | undefined>>
}

/** What a command gets: the outbox, the output mode, and a lazily opened backend. */
export interface CommandContext {
  readonly io: CliIo
  readonly outbox: Outbox
  readonly json: boolean
  /**
   * The backend `DATABASE_URL` names, by its scheme (opened on first use, closed by the CLI).
   *
   * @throws UsageError when `DATABASE_URL` is not set or its scheme is unknown.
   * @throws MissingPackageError when the database's optional packages are not installed.
   */
  backend(): Promise<OutboxBackend>
  /** What `DATABASE_URL` names, once {@link CommandContext.backend} has read it; else `undefined`. */
  readonly target: DatabaseTarget | undefined
  /** Prints `value` as JSON (with `--json`) or `human()` as text. */
  print(value: unknown, human: () => string): void
}

/** Builds the context of one command run; `close()` releases the backend if it was opened. */
export function createContext(
  io: CliIo,
  command: string,
  values: { table?: string | undefined; json?: boolean | undefined },
): CommandContext & { close(): Promise<void> } {
  const table = values.table ?? io.env.OUTBOX_TABLE ?? 'outbox'
  const outbox = defineOutbox({ table })
  const json = values.json === true
  let backend: Promise<OutboxBackend> | undefined
  let target: DatabaseTarget | undefined
  return {
    io,
    outbox,
    json,
    get target() {
      return target
    },
    backend() {
      backend ??= (async () => {
        const url = io.env.DATABASE_URL
        if (!url) {
          throw new UsageError(
            'DATABASE_URL is not set: export the connection string of your database, e.g. DATABASE_URL=postgres://user@host:5432/app, mysql://user@host:3306/app or sqlite:./app.db.',
            command,
          )
        }
        target = parseDatabaseUrl(url, command)
        return openBackend(target, { createFile: command === 'migrate' })
      })()
      return backend
    },
    print(value, human) {
      io.stdout(json ? JSON.stringify(value, null, 2) : human())
    },
    async close() {
      const opened = backend
      backend = undefined
      await (await opened?.catch(() => undefined))?.close()
    },
  }
}
