import { purge } from '@outboxkit/core'
import type { Command } from '../command.js'
import { parseDuration, UsageError } from '../usage.js'

/** `outboxkit purge`. */
export const purgeCommand: Command = {
  name: 'purge',
  summary: 'delete delivered and dead rows, by age',
  usage:
    'outboxkit purge (--older-than <duration> | --all) [--state dead|delivered]... [--table <name>] [--json]',
  details: `Deletes terminal rows settled more than --older-than ago (by available_at): dead letters and,
with keepDelivered, delivered rows. Never touches pending or processing rows, so it is safe while
relays run; run it from a scheduled job. Prints how many were deleted.

Options:
  --older-than <d>  only rows settled more than this long ago: 90s, 15m, 12h, 7d, 2w
  --all             every terminal row, whatever its age
  --state <state>   dead or delivered (repeatable; default both)`,
  options: {
    'older-than': { type: 'string' },
    all: { type: 'boolean', default: false },
    state: { type: 'string', multiple: true },
  },
  async run(values, ctx) {
    const olderThan = values['older-than'] as string | undefined
    if (values.all === true && olderThan !== undefined) {
      throw new UsageError('--all cannot be combined with --older-than.', 'purge')
    }
    if (values.all !== true && olderThan === undefined) {
      throw new UsageError('say which rows: --older-than <duration> (e.g. 7d), or --all.', 'purge')
    }
    const olderThanMs = olderThan === undefined ? 0 : parseDuration(olderThan, '--older-than', 'purge')
    const given = (values.state as string[] | undefined) ?? []
    for (const s of given) {
      if (s !== 'dead' && s !== 'delivered') {
        throw new UsageError(`--state must be dead or delivered, got ${JSON.stringify(s)}.`, 'purge')
      }
    }
    const states = given.length > 0 ? (given as ('dead' | 'delivered')[]) : (['dead', 'delivered'] as const)
    const n = await purge(ctx.outbox, await ctx.backend(), { states: [...new Set(states)], olderThanMs })
    ctx.print(
      { table: ctx.outbox.table.display, purged: n, states: [...new Set(states)], olderThanMs },
      () =>
        `purged ${n} row(s) (${[...new Set(states)].join(', ')}${olderThan ? `, older than ${olderThan}` : ''})`,
    )
  },
}
