import { readFileSync } from 'node:fs'
import { isOutboxError } from '@outboxkit/core'
import type { Command } from './command.js'
import { blockedCommand } from './commands/blocked.js'
import { dashboardCommand } from './commands/dashboard.js'
import { deadListCommand, discardCommand, redriveCommand } from './commands/dead.js'
import { inboxMigrateCommand, inboxPurgeCommand, inboxStatsCommand } from './commands/inbox.js'
import { migrateCommand, sqlCommand } from './commands/migrate.js'
import { purgeCommand } from './commands/purge.js'
import { slotDropCommand } from './commands/slot.js'
import { statsCommand } from './commands/stats.js'
import { type CliIo, createContext } from './context.js'
import { failureHint } from './hint.js'
import { MissingPackageError } from './optional-package.js'
import { parseCommandArgs, UsageError } from './usage.js'

/** Exit codes scripts can rely on. */
export const EXIT = {
  /** The command did what it was asked. */
  ok: 0,
  /** The command was well formed but failed: database unreachable, table missing, timeout, ... */
  operational: 1,
  /**
   * The command line or the setup was wrong: unknown command or option, bad value, DATABASE_URL
   * missing or of an unknown scheme, the database's optional packages not installed.
   */
  usage: 2,
} as const

/** Every command, in the order of the help. */
export const commands: readonly Command[] = [
  migrateCommand,
  sqlCommand,
  statsCommand,
  deadListCommand,
  blockedCommand,
  redriveCommand,
  discardCommand,
  purgeCommand,
  dashboardCommand,
  slotDropCommand,
  inboxMigrateCommand,
  inboxStatsCommand,
  inboxPurgeCommand,
]

const COMMON_HELP = `Options (every command):
  --table <name>   the outbox table: 'table' or 'schema.table'
                   (default: $OUTBOX_TABLE, else 'outbox')
  --json           machine-readable output on stdout (errors as JSON on stderr)
  -h, --help       this help

Environment:
  DATABASE_URL     the database, chosen by its scheme (every command but sql):
                     postgres://user@host:5432/app    PostgreSQL (also postgresql://)
                     mysql://user@host:3306/app       MySQL 8+ (also mariadb:// for MariaDB 10.6+)
                     sqlite:./app.db                  SQLite (also sqlite:///abs/path/app.db,
                                                      file:./app.db, file:///abs/path/app.db)
                   MySQL/MariaDB needs @outboxkit/mysql and mysql2 installed,
                   SQLite @outboxkit/sqlite and better-sqlite3.
  OUTBOX_TABLE     the default for --table

Exit codes: 0 ok, 1 operational error (database unreachable, table missing, timeout),
2 usage error (unknown command or option, bad value, DATABASE_URL not set or of an unknown
scheme, the database's packages not installed).`

function mainHelp(): string {
  const width = Math.max(...commands.map((c) => c.name.length))
  return `outboxkit: operate an outboxkit outbox table on PostgreSQL, MySQL/MariaDB or SQLite

Usage: outboxkit <command> [options]

Commands:
${commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Run \`outboxkit <command> --help\` for a command's options.

${COMMON_HELP}`
}

function commandHelp(command: Command): string {
  return `${command.usage}

${command.summary[0]!.toUpperCase()}${command.summary.slice(1)}.

${command.details}

${COMMON_HELP}`
}

function version(): string {
  try {
    return (
      JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
    ).version
  } catch {
    return 'unknown'
  }
}

/** Finds the command named by the first one or two words; returns it with the remaining args. */
function resolve(argv: string[]): { command: Command; rest: string[] } | undefined {
  const two = commands.find((c) => c.name === `${argv[0]} ${argv[1]}`)
  if (two) return { command: two, rest: argv.slice(2) }
  const one = commands.find((c) => c.name === argv[0])
  return one ? { command: one, rest: argv.slice(1) } : undefined
}

/**
 * Runs the `outboxkit` command line with `argv` (without `node` and the script) and returns the
 * exit code: 0 ok, 1 operational error, 2 usage error. Never throws.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const fail = failWith(io, argv.includes('--json'))
  const [first] = argv
  if (first === undefined || first === 'help' || first === '--help' || first === '-h')
    return help(argv, io, fail)
  if (first === '--version' || first === '-v') {
    io.stdout(version())
    return EXIT.ok
  }
  const found = resolve(argv)
  if (!found) return notACommand(argv, io, fail)
  const { command, rest } = found
  let context: ReturnType<typeof createContext> | undefined
  try {
    const { values } = parseCommandArgs(command.name, rest, command.options)
    if (values.help) {
      io.stdout(commandHelp(command))
      return EXIT.ok
    }
    context = createContext(io, command.name, values as { table?: string; json?: boolean })
    await command.run(values as Record<string, unknown>, context)
    return EXIT.ok
  } catch (error) {
    return failed(error, command.name, context, fail)
  } finally {
    await context?.close().catch(() => {})
  }
}

type Fail = (code: number, kind: string, message: string) => number

/** Writes an error (as JSON with `--json`) and returns the exit code. */
function failWith(io: CliIo, json: boolean): Fail {
  return (code, kind, message) => {
    io.stderr(json ? JSON.stringify({ error: { code: kind, message } }) : `outboxkit: ${message}`)
    return code
  }
}

/** `outboxkit`, `outboxkit --help`, `outboxkit help <command>`. */
function help(argv: string[], io: CliIo, fail: Fail): number {
  const [first] = argv
  const target = first === 'help' && argv.length > 1 ? resolve(argv.slice(1)) : undefined
  if (first === 'help' && argv.length > 1 && !target) {
    return fail(
      EXIT.usage,
      'USAGE',
      `unknown command ${JSON.stringify(argv.slice(1).join(' '))}. Run \`outboxkit --help\`.`,
    )
  }
  if (first === undefined) {
    io.stderr(mainHelp())
    return EXIT.usage
  }
  io.stdout(target ? commandHelp(target.command) : mainHelp())
  return EXIT.ok
}

/** An argv that names no command: `dead` alone, `dead --help`, or a typo. */
function notACommand(argv: string[], io: CliIo, fail: Fail): number {
  const [first] = argv
  if (first !== 'dead') {
    return fail(
      EXIT.usage,
      'USAGE',
      `unknown command ${JSON.stringify(first)}. Run \`outboxkit --help\` for the list.`,
    )
  }
  if (argv[1] === '--help' || argv[1] === '-h') {
    const deadCommands = commands.filter(
      (c) => c.name.startsWith('dead ') || ['blocked', 'redrive', 'discard', 'purge'].includes(c.name),
    )
    io.stdout(`Dead-letter commands:\n\n${deadCommands.map((c) => `  ${c.usage}`).join('\n')}`)
    return EXIT.ok
  }
  return fail(
    EXIT.usage,
    'USAGE',
    'dead needs a subcommand: `outboxkit dead list`. Run `outboxkit dead --help`.',
  )
}

/** The exit code and message of a command that threw. */
function failed(
  error: unknown,
  commandName: string,
  context: ReturnType<typeof createContext> | undefined,
  fail: Fail,
): number {
  if (error instanceof UsageError) {
    return fail(
      EXIT.usage,
      'USAGE',
      `${error.message}\nRun \`outboxkit ${error.command ?? commandName} --help\`.`,
    )
  }
  if (error instanceof MissingPackageError) return fail(EXIT.usage, 'MISSING_PACKAGE', error.message)
  if (isOutboxError(error, 'INVALID_CONFIG')) {
    return fail(EXIT.usage, error.code, error.message.replace(/^\[outboxkit\] /, ''))
  }
  const code = isOutboxError(error) ? error.code : 'ERROR'
  const message = (error instanceof Error ? error.message : String(error)).replace(/^\[outboxkit\] /, '')
  const hint = failureHint(error, context?.target, context?.outbox.table.display ?? 'outbox')
  return fail(EXIT.operational, code, `${message}${hint ? `\n${hint}` : ''}`)
}
