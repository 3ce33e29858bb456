import { defineOutbox, listBlockedKeys } from '@outboxkit/core'
import type { Command } from '../command.js'
import { formatTime, oneLine, table } from '../format.js'
import { parsePositiveInt } from '../usage.js'

/** `outboxkit blocked`: the keys of ordered topics held back by their head (`listBlockedKeys`). */
export const blockedCommand: Command = {
  name: 'blocked',
  summary: 'list the keys of ordered topics held back by a dead (or retrying) head',
  usage:
    'outboxkit blocked [--topic <topic>]... [--continue-topic <topic>]... [--retrying] [--limit <n>] [--after <key>] [--table <name>] [--json]',
  details: `Shows, per blocked key (sorted by key): the key, why (dead, or retrying with --retrying), how
many messages wait behind its head, and the head's id, topic, attempts, since when (UTC) and
last_error. Redrive the head (outboxkit redrive --id <id>) to run it again first, followed by the
rest of the key in order, or discard it to let the next message of the key go.

Options:
  --topic <topic>           only keys whose head is of this topic (repeatable)
  --continue-topic <topic>  a topic defined with onDeadLetter: 'continue' (repeatable): its dead
                            messages do not block their key, so they are not listed
  --retrying                also list keys whose head failed and waits for its next attempt
  --limit <n>               at most n keys (default 100, at most 10000)
  --after <key>             the next page: the last key of the previous page`,
  options: {
    topic: { type: 'string', multiple: true },
    'continue-topic': { type: 'string', multiple: true },
    retrying: { type: 'boolean', default: false },
    limit: { type: 'string', default: '100' },
    after: { type: 'string' },
  },
  async run(values, ctx) {
    const limit = parsePositiveInt(values.limit as string, '--limit', 'blocked', 10_000)
    const topics = values.topic as string[] | undefined
    const continues = (values['continue-topic'] as string[] | undefined) ?? []
    // The CLI knows no outbox definition: the continue topics are the only part of it that matters here.
    const outbox = defineOutbox({
      table: ctx.outbox.table.display,
      orderedTopics: continues.map((topic) => ({ topic, onDeadLetter: 'continue' as const })),
    })
    const keys = await listBlockedKeys(outbox, await ctx.backend(), {
      limit,
      includeRetrying: values.retrying === true,
      ...(topics?.length ? { topics } : {}),
      ...(typeof values.after === 'string' ? { afterKey: values.after } : {}),
    })
    ctx.print(keys, () => {
      if (keys.length === 0) return `no blocked keys in ${ctx.outbox.table.display}`
      const more =
        keys.length === limit ? ` (the first ${limit}; --after ${keys.at(-1)!.key} for the next)` : ''
      return [
        `${keys.length} blocked key(s) in ${ctx.outbox.table.display}${more}:`,
        '',
        table(
          ['key', 'reason', 'waiting', 'head id', 'topic', 'attempts', 'since (UTC)', 'last error'],
          keys.map((k) => [
            oneLine(k.key, 40),
            k.reason,
            String(k.waiting),
            k.head.id,
            k.head.topic,
            String(k.head.attempts),
            formatTime(k.head.since),
            oneLine(k.head.lastError, 50),
          ]),
          new Set([2, 5]),
        ),
      ].join('\n')
    })
  },
}
