import type { Outbox } from '../outbox/define-outbox.js'
import type { OutboxWal } from '../protocol/wal.js'
import type { SafeLogger } from '../telemetry/logger.js'

/** How often a slot reader checks what its slot retains. */
export const SLOT_HEALTH_EVERY_MS = 30_000

/**
 * Logs a warning when the outbox's slot retains more than `warnBytes` of WAL (docs/wal.md, "Slot
 * safety"). Best effort: a failing lookup is left to the stream, which reports real failures.
 */
export async function warnIfSlotRetains(
  wal: OutboxWal,
  outbox: Outbox,
  warnBytes: number,
  log: SafeLogger,
): Promise<void> {
  try {
    const stats = await wal.slotStats(outbox)
    if (stats && stats.retainedBytes > warnBytes) {
      log.log(
        'warn',
        { table: outbox.table.display, slot: stats.slot, retainedBytes: stats.retainedBytes },
        `the replication slot ${stats.slot} retains ${stats.retainedBytes} bytes of WAL (more than slotWarnBytes ${warnBytes}); see docs/wal.md, "Slot safety"`,
      )
    }
  } catch {
    // Health is best effort; the stream reports real failures.
  }
}
