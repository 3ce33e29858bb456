import { discard, listDead, redrive } from '@outboxkit/core'
import type { Command } from '../command.js'
import { formatTime, oneLine, table } from '../format.js'
import { parseIds, parsePositiveInt, UsageError } from '../usage.js'

const SELECT_OPTIONS = {
  id: { type: 'string', multiple: true },
  topic: { type: 'string', multiple: true },
  all: { type: 'boolean', default: false },
} as const

const SELECT_HELP = `  --id <id>        only this message (repeatable)
  --topic <topic>  only dead messages of this topic (repeatable)
  --all            every dead message (required when neither --id nor --topic is given)`

/** Which dead messages `redrive` / `discard` act on; refuses an empty or contradictory selection. */
function selection(values: Record<string, unknown>, command: string) {
  const ids = parseIds(values.id as string[] | undefined, command)
  const topics = (values.topic as string[] | undefined)?.length ? (values.topic as string[]) : undefined
  if (values.all === true && (ids || topics)) {
    throw new UsageError('--all cannot be combined with --id or --topic.', command)
  }
  if (values.all !== true && !ids && !topics) {
    throw new UsageError(
      'say which dead messages: --id <id>, --topic <topic>, or --all for every one.',
      command,
    )
  }
  return { ...(ids ? { ids } : {}), ...(topics ? { topics } : {}) }
}

/** `outboxkit dead list`. */
export const deadListCommand: Command = {
  name: 'dead list',
  summary: 'list dead-lettered messages with their last error, newest first',
  usage: 'outboxkit dead list [--topic <topic>]... [--limit <n>] [--table <name>] [--json]',
  details: `Shows id, topic, attempts, when it died and last_error (the handler's error, the Cancel
reason, or why the claim gave up). --json adds key, payload, headers and created_at.

Options:
  --topic <topic>  only this topic (repeatable)
  --limit <n>      at most n messages (default 50, at most 10000)`,
  options: { topic: { type: 'string', multiple: true }, limit: { type: 'string', default: '50' } },
  async run(values, ctx) {
    const limit = parsePositiveInt(values.limit as string, '--limit', 'dead list', 10_000)
    const topics = values.topic as string[] | undefined
    const dead = await listDead(ctx.outbox, await ctx.backend(), {
      limit,
      ...(topics?.length ? { topics } : {}),
    })
    ctx.print(dead, () => {
      if (dead.length === 0) return `no dead messages in ${ctx.outbox.table.display}`
      const more = dead.length === limit ? ` (the newest ${limit}; use --limit to see more)` : ''
      return [
        `${dead.length} dead message(s) in ${ctx.outbox.table.display}, newest first${more}:`,
        '',
        table(
          ['id', 'topic', 'attempts', 'dead at (UTC)', 'last error'],
          dead.map((d) => [
            d.id,
            d.topic,
            String(d.attempts),
            formatTime(d.deadAt),
            oneLine(d.lastError, 60),
          ]),
          new Set([2]),
        ),
      ].join('\n')
    })
  },
}

/** `outboxkit redrive`. */
export const redriveCommand: Command = {
  name: 'redrive',
  summary: 'put dead messages back in the queue (attempts reset, due now)',
  usage: 'outboxkit redrive (--id <id>... | --topic <topic>... | --all) [--table <name>] [--json]',
  details: `Moves dead messages back to pending with attempts = 0, due now; last_error is kept. Running
relays pick them up at their next poll. Safe while relays run. Prints how many were redriven.

Options:
${SELECT_HELP}`,
  options: SELECT_OPTIONS,
  async run(values, ctx) {
    const which = selection(values, 'redrive')
    const n = await redrive(ctx.outbox, await ctx.backend(), which)
    ctx.print(
      { table: ctx.outbox.table.display, redriven: n },
      () => `redrove ${n} dead message(s) back to pending`,
    )
  },
}

/** `outboxkit discard`. */
export const discardCommand: Command = {
  name: 'discard',
  summary: 'delete dead messages for good',
  usage: 'outboxkit discard (--id <id>... | --topic <topic>... | --all) [--table <name>] [--json]',
  details: `Deletes dead messages (never pending, processing or delivered ones), freeing their dedupKeys.
Prints how many were deleted.

Options:
${SELECT_HELP}`,
  options: SELECT_OPTIONS,
  async run(values, ctx) {
    const which = selection(values, 'discard')
    const n = await discard(ctx.outbox, await ctx.backend(), which)
    ctx.print({ table: ctx.outbox.table.display, discarded: n }, () => `discarded ${n} dead message(s)`)
  },
}
