import {
  defineInbox,
  INBOX_DEFAULT_RETENTION_MS,
  type Inbox,
  inboxStats,
  migrate,
  purge,
} from '@outboxkit/core'
import type { Command, OptionSpec } from '../command.js'
import type { CommandContext } from '../context.js'
import { parseDuration } from '../usage.js'

// `outboxkit inbox migrate | purge | stats`: the consumer side's table (defineInbox).

const INBOX_OPTIONS: OptionSpec = {
  inbox: { type: 'string' },
  consumer: { type: 'string' },
}

const INBOX_DETAILS = `  --inbox <name>      the inbox table (default $INBOX_TABLE, else inbox)
  --consumer <name>   the consumer (default $INBOX_CONSUMER, else default)`

/** The inbox the options (or the environment) name. */
function inboxOf(values: Record<string, unknown>, ctx: CommandContext): Inbox {
  return defineInbox({
    table: (values.inbox as string | undefined) ?? ctx.io.env.INBOX_TABLE ?? 'inbox',
    consumer: (values.consumer as string | undefined) ?? ctx.io.env.INBOX_CONSUMER ?? 'default',
  })
}

/** `outboxkit inbox migrate`. */
export const inboxMigrateCommand: Command = {
  name: 'inbox migrate',
  summary: 'create the inbox table and its index if missing (idempotent)',
  usage: 'outboxkit inbox migrate [--inbox <name>] [--json]',
  details: `Creates the inbox table (consumer, message_id, processed_at) and its (consumer, processed_at)
index with IF NOT EXISTS: safe to run again. What migrate(inbox, backend) runs.

Options:
${INBOX_DETAILS}`,
  options: INBOX_OPTIONS,
  async run(values, ctx) {
    const inbox = inboxOf(values, ctx)
    await migrate(inbox, await ctx.backend())
    ctx.print(
      { inbox: inbox.table.display, migrated: true },
      () => `migrated ${inbox.table.display}: table and index are in place`,
    )
  },
}

/** `outboxkit inbox purge`. */
export const inboxPurgeCommand: Command = {
  name: 'inbox purge',
  summary: "delete a consumer's processed message ids older than a window (default 7d)",
  usage:
    'outboxkit inbox purge [--older-than <duration>] [--inbox <name>] [--consumer <name>] [--batch-size <n>] [--json]',
  details: `Deletes the consumer's inbox rows processed more than --older-than ago (default 7d), in
batches of --batch-size rows (default 1000), each a statement of its own that walks the
(consumer, processed_at) index. A message redelivered after its row was purged is processed
again: keep the window longer than any redelivery you expect. Run it from a scheduled job.

Options:
  --older-than <d>    90s, 15m, 12h, 7d, 2w (default 7d)
  --batch-size <n>    rows per DELETE, 1 to 100000 (default 1000)
${INBOX_DETAILS}`,
  options: { ...INBOX_OPTIONS, 'older-than': { type: 'string' }, 'batch-size': { type: 'string' } },
  async run(values, ctx) {
    const inbox = inboxOf(values, ctx)
    const olderThan = values['older-than'] as string | undefined
    const olderThanMs =
      olderThan === undefined
        ? INBOX_DEFAULT_RETENTION_MS
        : parseDuration(olderThan, '--older-than', 'inbox purge')
    const batch = values['batch-size'] as string | undefined
    const batchSize = batch === undefined ? undefined : Number(batch)
    const n = await purge(inbox, await ctx.backend(), {
      olderThanMs,
      ...(batchSize === undefined ? {} : { batchSize }),
    })
    ctx.print(
      { inbox: inbox.table.display, consumer: inbox.consumer, purged: n, olderThanMs },
      () => `purged ${n} processed id(s) of ${inbox.consumer} older than ${olderThan ?? '7d'}`,
    )
  },
}

/** `outboxkit inbox stats`. */
export const inboxStatsCommand: Command = {
  name: 'inbox stats',
  summary: "count a consumer's processed message ids and the age of the oldest",
  usage: 'outboxkit inbox stats [--inbox <name>] [--consumer <name>] [--json]',
  details: `How many processed message ids the consumer keeps, and the age of the oldest: how far back a
duplicate is still recognised. One read-only statement.

Options:
${INBOX_DETAILS}`,
  options: INBOX_OPTIONS,
  async run(values, ctx) {
    const inbox = inboxOf(values, ctx)
    const stats = await inboxStats(inbox, await ctx.backend())
    ctx.print(
      { inbox: inbox.table.display, ...stats },
      () =>
        `${inbox.table.display} (${stats.consumer}): ${stats.count} processed id(s)${
          stats.oldestAgeMs === null ? '' : `, oldest ${Math.round(stats.oldestAgeMs / 1000)} s old`
        }`,
    )
  },
}
