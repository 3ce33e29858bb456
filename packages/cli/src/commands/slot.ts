import { defineOutbox } from '@outboxkit/core'
import type { Command } from '../command.js'
import { UsageError } from '../usage.js'

/** `outboxkit slot drop`: decommissions the replication slot of a `transport: 'wal'` outbox. */
export const slotDropCommand: Command = {
  name: 'slot drop',
  summary: "drop the replication slot of a transport 'wal' outbox (stop its relays first)",
  usage: 'outboxkit slot drop --yes [--table <name>] [--json]',
  details: `Drops the logical replication slot (and its publication) that migrate created for a
transport 'wal' outbox (docs/wal.md), so the server stops retaining WAL for it. Messages committed
into the WAL and not yet confirmed by a relay are lost with it: stop every relay of the outbox and
let it drain first. PostgreSQL refuses while a relay reads the slot. migrate creates a new slot,
which starts at the current WAL position. Needs --yes.

Options:
  --yes            confirm`,
  options: { yes: { type: 'boolean', default: false } },
  async run(values, ctx) {
    if (values.yes !== true)
      throw new UsageError('slot drop loses unconfirmed messages: pass --yes to confirm.', 'slot drop')
    const backend = await ctx.backend()
    if (!backend.wal) {
      throw new UsageError(
        `the ${backend.name} backend has no replication slots (the WAL transport needs PostgreSQL through pg).`,
        'slot drop',
      )
    }
    const outbox = defineOutbox({ table: ctx.outbox.table.display, transport: 'wal' })
    const dropped = await backend.wal.dropSlot(outbox)
    ctx.print({ table: outbox.table.display, dropped }, () =>
      dropped
        ? `dropped the replication slot of ${outbox.table.display}`
        : `${outbox.table.display} has no replication slot`,
    )
  },
}
