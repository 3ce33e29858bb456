import { type ParseArgsConfig, parseArgs } from 'node:util'

/** A mistake in how the command was called: exit code 2, with the command's help hint. */
export class UsageError extends Error {
  /** The command whose `--help` to point at, e.g. `'dead list'`. */
  readonly command: string | undefined

  /**
   * @param message - what was wrong, and how to call it instead
   * @param command - the command whose `--help` the hint names
   */
  constructor(message: string, command?: string) {
    super(message)
    this.name = 'UsageError'
    this.command = command
  }
}

/** Options every command accepts. */
export const COMMON_OPTIONS = {
  table: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const

type OptionSpec = NonNullable<ParseArgsConfig['options']>

/** Parsed command-line values: strings, booleans and string lists, by option name. */
export interface ParsedArgs {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>
  positionals: string[]
}

/**
 * `node:util` parseArgs, strict, with the common options, turning its errors into a
 * {@link UsageError} for `command`.
 */
export function parseCommandArgs(
  command: string,
  args: string[],
  options: OptionSpec,
  positionals = 0,
): ParsedArgs {
  let parsed: ParsedArgs
  try {
    parsed = parseArgs({
      args,
      options: { ...COMMON_OPTIONS, ...options },
      allowPositionals: true,
      strict: true,
    }) as ParsedArgs
  } catch (error) {
    throw new UsageError(
      (error as Error).message.replace(/\. To specify a positional argument.*$/s, '.'),
      command,
    )
  }
  if (!parsed.values.help && parsed.positionals.length > positionals) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals])}.`, command)
  }
  return parsed
}

const UNITS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
}

/** Parses a duration like `90s`, `15m`, `12h`, `7d` or `500ms` into milliseconds. */
export function parseDuration(text: string, option: string, command: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/.exec(text.trim())
  if (!m) {
    throw new UsageError(
      `${option} must be a duration like 30s, 15m, 12h or 7d, got ${JSON.stringify(text)}.`,
      command,
    )
  }
  return Number(m[1]) * UNITS[m[2]!]!
}

/** Parses a positive integer option. */
export function parsePositiveInt(text: string, option: string, command: string, max: number): number {
  const n = Number(text)
  if (!/^\d+$/.test(text) || n < 1 || n > max) {
    throw new UsageError(
      `${option} must be an integer from 1 to ${max}, got ${JSON.stringify(text)}.`,
      command,
    )
  }
  return n
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Checks `--id` values are UUIDs. */
export function parseIds(ids: string[] | undefined, command: string): string[] | undefined {
  if (!ids || ids.length === 0) return undefined
  for (const id of ids) {
    if (!UUID.test(id))
      throw new UsageError(`--id must be a message id (a UUID), got ${JSON.stringify(id)}.`, command)
  }
  return ids
}
