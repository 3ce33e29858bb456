import { defineOutbox, type Outbox, type OutboxBackend } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
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
  /** The backend on `DATABASE_URL` (opened on first use, closed by the CLI). */
  backend(): OutboxBackend
  /** Prints `value` as JSON (with `--json`) or `human()` as text. */
  print(value: unknown, human: () => string): void
}

/** Connection bound: a server that does not answer fails the command within this. */
const CONNECT_TIMEOUT_MS = 10_000
/** Statement bound: generous, since purge and discard may delete many rows. */
const COMMAND_TIMEOUT_MS = 120_000

/** Builds the context of one command run; `close()` releases the backend if it was opened. */
export function createContext(
  io: CliIo,
  command: string,
  values: { table?: string | undefined; json?: boolean | undefined },
): CommandContext & { close(): Promise<void> } {
  const table = values.table ?? io.env.OUTBOX_TABLE ?? 'outbox'
  const outbox = defineOutbox({ table })
  const json = values.json === true
  let backend: OutboxBackend | undefined
  return {
    io,
    outbox,
    json,
    backend() {
      if (backend) return backend
      const url = io.env.DATABASE_URL
      if (!url) {
        throw new UsageError(
          'DATABASE_URL is not set: export the connection string of your database, e.g. DATABASE_URL=postgres://user@host:5432/app.',
          command,
        )
      }
      backend = pgBackend({
        connectionString: url,
        max: 1,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
        commandTimeoutMs: COMMAND_TIMEOUT_MS,
        preparedStatements: false,
      })
      return backend
    },
    print(value, human) {
      io.stdout(json ? JSON.stringify(value, null, 2) : human())
    },
    async close() {
      await backend?.close()
    },
  }
}
