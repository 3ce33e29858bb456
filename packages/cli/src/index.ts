export type { Command, OptionSpec } from './command.js'
export type { CliIo, CommandContext } from './context.js'
export {
  ACCEPTED_SCHEMES,
  type DatabaseTarget,
  type OutboxDialect,
  parseDatabaseUrl,
} from './database-url.js'
export { MissingPackageError } from './optional-package.js'
export { commands, EXIT, runCli } from './run.js'
export { UsageError } from './usage.js'
