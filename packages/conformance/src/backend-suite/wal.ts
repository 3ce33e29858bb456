import { defineOutbox, migrate, type Outbox, type OutboxBackend } from '@outboxkit/core'
import type { WalReader, WalTransaction } from '@outboxkit/core/adapter'
import { encodeWalContent, walNames } from '@outboxkit/core/adapter'
import { afterAll, describe, expect, test } from 'vitest'
import { uniqueTableName, waitFor } from '../database.js'
import type { BackendSuite } from './suite.js'

/**
 * The WAL transport of a backend (`OutboxBackend.wal`, docs/wal.md), for backends that have one:
 * `migrate` creates the pgoutput slot; `read` streams committed messages in commit order and
 * never rolled-back ones; a second reader is told `'busy'`; `confirm` moves the slot's
 * `confirmed_flush_lsn`; `moveToTable` writes rows and leaves existing ones; `dropSlot` drops it.
 * Messages are written and the slot inspected with raw SQL. Backends without `wal` skip it.
 */
export function registerWalBackendTests(suite: BackendSuite): void {
  describe('wal', () => {
    const created: Outbox[] = []
    const readers: WalReader[] = []
    afterAll(async () => {
      for (const r of readers) await r.close().catch(() => {})
      for (const outbox of created) {
        const { slot } = walNames(outbox.table)
        await waitFor(
          async () =>
            (
              await suite.opened.ctx.inspect(
                'SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND active',
                [slot],
              )
            ).length === 0,
          { what: 'the slot released' },
        ).catch(() => {})
        await suite.opened.ctx
          .inspect(
            'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1',
            [slot],
          )
          .catch(() => {})
        await suite.opened.ctx.inspect(`DROP PUBLICATION IF EXISTS "${slot}"`).catch(() => {})
        await suite.opened.sql.drop(outbox.table.name).catch(() => {})
      }
    })
    const walBackend = (context: {
      skip(note?: string): never
    }): OutboxBackend & Required<Pick<OutboxBackend, 'wal'>> => {
      const { backend } = suite.opened
      if (!backend.wal || process.env.OUTBOXKIT_WAL_SKIPPED !== undefined)
        context.skip('no WAL transport on this backend or server')
      return backend as OutboxBackend & Required<Pick<OutboxBackend, 'wal'>>
    }
    const emit = (outbox: Outbox, ids: string[], rollback = false) =>
      suite.opened.ctx
        .inspect(
          `DO $$ BEGIN PERFORM pg_logical_emit_message(true, '${walNames(outbox.table).prefix}', '${encodeWalContent(
            ids.map((id) => ({
              id,
              topic: 't',
              key: null,
              payload: '{"n":1}',
              headers: '{}',
              delayMs: 0,
              dedupKey: null,
            })),
            1,
          )}'); ${rollback ? "RAISE EXCEPTION 'rollback';" : ''} END $$`,
        )
        .catch((err) => {
          if (!rollback) throw err
        })

    test('migrate creates the slot; read streams committed messages in commit order; a second reader is busy; confirm moves the slot', async (context) => {
      const backend = walBackend(context)
      const outbox = defineOutbox({ table: uniqueTableName(`be_wal_${suite.name}`), transport: 'wal' })
      created.push(outbox)
      await migrate(outbox, backend)
      const { slot } = walNames(outbox.table)
      expect(
        await suite.opened.ctx.inspect('SELECT plugin FROM pg_replication_slots WHERE slot_name = $1', [
          slot,
        ]),
      ).toEqual([{ plugin: 'pgoutput' }])
      const txs: WalTransaction[] = []
      const reader = await backend.wal.read(outbox, {
        onTransaction: (tx) => void txs.push(tx),
        onProgress() {},
        onInvalid() {},
        onEnd() {},
      })
      expect(reader).not.toBe('busy')
      readers.push(reader as WalReader)
      const other = suite.opened.ctx.backend()
      expect(
        await other.wal!.read(outbox, { onTransaction() {}, onProgress() {}, onInvalid() {}, onEnd() {} }),
      ).toBe('busy')
      await other.close()
      const [a, b, c] = [
        '0192f0b0-0000-7000-8000-00000000000a',
        '0192f0b0-0000-7000-8000-00000000000b',
        '0192f0b0-0000-7000-8000-00000000000c',
      ]
      await emit(outbox, [a!])
      await emit(outbox, [b!], true)
      await emit(outbox, [c!])
      await waitFor(() => txs.length >= 2, { what: 'two transactions' })
      expect(txs.map((t) => t.rows.map((r) => r.id))).toEqual([[a], [c]])
      expect(txs[0]!.endLsn < txs[1]!.endLsn).toBe(true)
      ;(reader as WalReader).confirm(txs[1]!.endLsn)
      await waitFor(
        async () => {
          const [s] = await suite.opened.ctx.inspect(
            'SELECT confirmed_flush_lsn >= $2::pg_lsn AS ok FROM pg_replication_slots WHERE slot_name = $1',
            [slot, `${(txs[1]!.endLsn >> 32n).toString(16)}/${(txs[1]!.endLsn & 0xffffffffn).toString(16)}`],
          )
          return s?.ok === true
        },
        { what: 'the confirmation' },
      )
      const stats = await backend.wal.slotStats(outbox)
      expect(stats).toMatchObject({ slot, active: true })
      await (reader as WalReader).close()
      // moveToTable writes rows; a row already there stays as it is.
      const row = txs[0]!.rows[0]!
      await backend.wal.moveToTable(outbox.table, [
        { row, state: 'pending', attempts: 1, delayMs: 0, error: 'boom' },
      ])
      await backend.wal.moveToTable(outbox.table, [
        { row, state: 'dead', attempts: 5, delayMs: 0, error: 'again' },
      ])
      expect(await suite.opened.sql.row(outbox.table.name, a!)).toMatchObject({
        state: 'pending',
        attempts: 1,
        last_error: 'boom',
      })
      await waitFor(async () => (await backend.wal.slotStats(outbox))?.active === false, {
        what: 'the slot released',
      })
      expect(await backend.wal.dropSlot(outbox)).toBe(true)
      expect(await backend.wal.slotStats(outbox)).toBeNull()
    })
  })
}
