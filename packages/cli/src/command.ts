import type { ParseArgsConfig } from 'node:util'
import type { CommandContext } from './context.js'

/** The option specs of `node:util` parseArgs that commands use. */
export type OptionSpec = NonNullable<ParseArgsConfig['options']>

/** One `outboxkit` command. */
export interface Command {
  /** As typed: `'stats'`, `'dead list'`. */
  readonly name: string
  /** One line for the command list. */
  readonly summary: string
  /** The usage line, e.g. `outboxkit redrive (--id <id>... | --topic <topic>... | --all)`. */
  readonly usage: string
  /** What it does and its own options, for `--help`. */
  readonly details: string
  /** Its own options (the common ones are added). */
  readonly options: OptionSpec
  /** Runs it; throws `UsageError` for a bad call, anything else is an operational error. */
  run(values: Record<string, unknown>, ctx: CommandContext): Promise<void>
}
