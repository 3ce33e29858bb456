import { outboxStats } from '@outboxkit/core'
import type { Command } from '../command.js'
import { formatDuration, table } from '../format.js'

/** `outboxkit stats`: the state of the queue. */
export const statsCommand: Command = {
  name: 'stats',
  summary: 'depth by state and topic, oldest pending age, how late the relay is, dead count',
  usage: 'outboxkit stats [--delivered] [--table <name>] [--json]',
  details: `Reads the queue in one read-only statement (a scan of the non-delivered rows).

  oldest pending   age of the oldest message not yet delivered (includes delayed messages and
                   messages waiting for a retry)
  oldest due lag   how late the oldest due message is: the number to alert on

Options:
  --delivered      also count delivered rows (kept with keepDelivered: true); a full scan`,
  options: { delivered: { type: 'boolean', default: false } },
  async run(values, ctx) {
    const backend = await ctx.backend()
    const stats = await outboxStats(ctx.outbox, backend, {
      includeDelivered: values.delivered === true,
    })
    // The WAL transport's slot, when the table has one (docs/wal.md): its name derives from the table.
    const slot = backend.wal ? await backend.wal.slotStats(ctx.outbox) : null
    ctx.print({ table: ctx.outbox.table.display, ...stats, ...(slot ? { slot } : {}) }, () => {
      const withDelivered = stats.states.delivered !== null
      const states: [string, number][] = [
        ['pending', stats.states.pending],
        ['processing', stats.states.processing],
        ['dead', stats.states.dead],
        ...(withDelivered ? ([['delivered', stats.states.delivered!]] as [string, number][]) : []),
      ]
      const lines = [
        `table ${ctx.outbox.table.display}`,
        '',
        table(
          ['state', 'messages'],
          states.map(([s, n]) => [s, String(n)]),
          new Set([1]),
        ),
        '',
        `oldest pending   ${formatDuration(stats.oldestPendingAgeMs)}`,
        `oldest due lag   ${formatDuration(stats.oldestDueLagMs)}`,
        `dead             ${stats.dead}`,
        ...(slot
          ? [
              '',
              `slot ${slot.slot}   ${slot.active ? 'read by a relay' : 'NOT READ (no relay)'}, wal_status ${slot.walStatus ?? '-'}`,
              `slot retained    ${slot.retainedBytes} bytes of WAL`,
              `slot lag         ${slot.lagBytes} bytes since the last confirmation`,
            ]
          : []),
      ]
      if (stats.topics.length > 0) {
        const header = [
          'topic',
          'pending',
          'processing',
          'dead',
          ...(withDelivered ? ['delivered'] : []),
          'oldest pending',
          'due lag',
        ]
        lines.push(
          '',
          table(
            header,
            stats.topics.map((t) => [
              t.topic,
              String(t.pending),
              String(t.processing),
              String(t.dead),
              ...(withDelivered ? [String(t.delivered ?? 0)] : []),
              formatDuration(t.oldestPendingAgeMs),
              formatDuration(t.oldestDueLagMs),
            ]),
            new Set(header.map((_, i) => i).filter((i) => i > 0)),
          ),
        )
      }
      return lines.join('\n')
    })
  },
}
