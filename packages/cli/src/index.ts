export type { Command, OptionSpec } from './command.js'
export type { CliIo, CommandContext } from './context.js'
export { commands, EXIT, runCli } from './run.js'
export { UsageError } from './usage.js'
