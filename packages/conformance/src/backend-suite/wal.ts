import { defineOutbox, migrate, type Outbox, type OutboxBackend } from '@outboxkit/core'
import type { WalReader, WalTransaction } from '@outboxkit/core/adapter'
import { encodeWalContent, walNames } from '@outboxkit/core/adapter'
import { afterAll, describe, expect, test } from 'vitest'
import { uniqueTableName, waitFor } from '../database.js'
import type { BackendSuite } from './suite.js'

type WalBackend = OutboxBackend & Required<Pick<OutboxBackend, 'wal'>>

/** Waits for the outbox's slot to be released, then drops it, its publication and its table. */
async function dropWalObjects(suite: BackendSuite, outbox: Outbox): Promise<void> {
  const { slot } = walNames(outbox.table)
  const { ctx, sql } = suite.opened
  await waitFor(
    async () =>
      (await ctx.inspect('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND active', [slot]))
        .length === 0,
    { what: 'the slot released' },
  ).catch(() => {})
  await ctx
    .inspect('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1', [
      slot,
    ])
    .catch(() => {})
  await ctx.inspect(`DROP PUBLICATION IF EXISTS "${slot}"`).catch(() => {})
  await ctx.inspect(`DROP TABLE IF EXISTS "${walNames(outbox.table).markTable}"`).catch(() => {})
  await sql.drop(outbox.table.name).catch(() => {})
}

/** The suite's backend when it has a WAL transport (and the server allows one); else skips the test. */
function walBackendOf(suite: BackendSuite, context: { skip(note?: string): never }): WalBackend {
  const { backend } = suite.opened
  if (!backend.wal || process.env.OUTBOXKIT_WAL_SKIPPED !== undefined)
    context.skip('no WAL transport on this backend or server')
  return backend as WalBackend
}

/** Writes one WAL message per id with raw SQL in one transaction, rolled back when asked. */
function emit(suite: BackendSuite, outbox: Outbox, ids: string[], rollback = false): Promise<unknown> {
  const content = encodeWalContent(
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
  )
  return suite.opened.ctx
    .inspect(
      `DO $$ BEGIN PERFORM pg_logical_emit_message(true, '${walNames(outbox.table).prefix}', '${content}'); ${rollback ? "RAISE EXCEPTION 'rollback';" : ''} END $$`,
    )
    .catch((err) => {
      if (!rollback) throw err
    })
}

/** An LSN as PostgreSQL writes it (`16/B374D848`). */
const lsnText = (lsn: bigint) => `${(lsn >> 32n).toString(16)}/${(lsn & 0xffffffffn).toString(16)}`

const noHandlers = { onTransaction() {}, onProgress() {}, onInvalid() {}, onEnd() {} }

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
      for (const outbox of created) await dropWalObjects(suite, outbox)
    })

    test('migrate creates the slot; read streams committed messages in commit order; a second reader is busy; confirm moves the slot', async (context) => {
      const backend = walBackendOf(suite, context)
      const outbox = defineOutbox({ table: uniqueTableName(`be_wal_${suite.name}`), transport: 'wal' })
      created.push(outbox)
      await migrate(outbox, backend)
      const { reader, txs } = await expectSlotAndOneReader(suite, backend, outbox, readers)
      await expectCommittedInOrder(suite, outbox, txs)
      await expectConfirmMovesSlot(suite, backend, outbox, reader, txs[1]!)
      await reader.close()
      await expectMoveToTableKeepsRows(suite, backend, outbox, txs[0]!)
      await waitFor(async () => (await backend.wal.slotStats(outbox))?.active === false, {
        what: 'the slot released',
      })
      expect(await backend.wal.dropSlot(outbox)).toBe(true)
      expect(await backend.wal.slotStats(outbox)).toBeNull()
    })

    test('the dispatch mark: 0 after migrate, moves only forward unless exact, read through raw SQL; dropSlot drops its table', async (context) => {
      const backend = walBackendOf(suite, context)
      const outbox = defineOutbox({ table: uniqueTableName(`be_mark_${suite.name}`), transport: 'wal' })
      created.push(outbox)
      await migrate(outbox, backend)
      const { slot, markTable } = walNames(outbox.table)
      const stored = async () =>
        (
          await suite.opened.ctx.inspect(
            `SELECT dispatched_lsn::text AS lsn FROM "${markTable}" WHERE slot = $1`,
            [slot],
          )
        )[0]?.lsn
      expect(await backend.wal.readDispatchMark(outbox)).toBe(0n)
      await backend.wal.writeDispatchMark(outbox, 0x1_0000_00a0n, false)
      expect(await stored()).toBe('1/A0')
      await backend.wal.writeDispatchMark(outbox, 0x50n, false) // never back
      expect(await backend.wal.readDispatchMark(outbox)).toBe(0x1_0000_00a0n)
      await backend.wal.writeDispatchMark(outbox, 0x50n, true) // unless exact
      expect(await stored()).toBe('0/50')
      expect(await backend.wal.readDispatchMark(outbox)).toBe(0x50n)
      expect(await backend.wal.dropSlot(outbox)).toBe(true)
      const error = await backend.wal.readDispatchMark(outbox).catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'WAL_UNAVAILABLE' })
      expect(String((error as Error).message)).toContain('run migrate(outbox, backend) again')
    })
  })
}

/** A reader and the transactions it received so far. */
interface RecordingReader {
  readonly reader: WalReader
  readonly txs: WalTransaction[]
}

/** The slot is pgoutput's; the first reader streams, a second one is told `'busy'`. */
async function expectSlotAndOneReader(
  suite: BackendSuite,
  backend: WalBackend,
  outbox: Outbox,
  readers: WalReader[],
): Promise<RecordingReader> {
  const { slot } = walNames(outbox.table)
  expect(
    await suite.opened.ctx.inspect('SELECT plugin FROM pg_replication_slots WHERE slot_name = $1', [slot]),
  ).toEqual([{ plugin: 'pgoutput' }])
  const txs: WalTransaction[] = []
  const reader = await backend.wal.read(outbox, { ...noHandlers, onTransaction: (tx) => void txs.push(tx) })
  expect(reader).not.toBe('busy')
  readers.push(reader as WalReader)
  const other = suite.opened.ctx.backend()
  expect(await other.wal!.read(outbox, noHandlers)).toBe('busy')
  await other.close()
  return { reader: reader as WalReader, txs }
}

/** Committed, rolled back, committed: the reader gets the two committed ones, in commit order. */
async function expectCommittedInOrder(
  suite: BackendSuite,
  outbox: Outbox,
  txs: WalTransaction[],
): Promise<void> {
  const [a, b, c] = [
    '0192f0b0-0000-7000-8000-00000000000a',
    '0192f0b0-0000-7000-8000-00000000000b',
    '0192f0b0-0000-7000-8000-00000000000c',
  ]
  await emit(suite, outbox, [a])
  await emit(suite, outbox, [b], true)
  await emit(suite, outbox, [c])
  await waitFor(() => txs.length >= 2, { what: 'two transactions' })
  expect(txs.map((t) => t.rows.map((r) => r.id))).toEqual([[a], [c]])
  expect(txs[0]!.endLsn < txs[1]!.endLsn).toBe(true)
}

/** `confirm` moves the slot's `confirmed_flush_lsn` to the transaction's end; the slot reads active. */
async function expectConfirmMovesSlot(
  suite: BackendSuite,
  backend: WalBackend,
  outbox: Outbox,
  reader: WalReader,
  tx: WalTransaction,
): Promise<void> {
  const { slot } = walNames(outbox.table)
  reader.confirm(tx.endLsn)
  await waitFor(
    async () => {
      const [s] = await suite.opened.ctx.inspect(
        'SELECT confirmed_flush_lsn >= $2::pg_lsn AS ok FROM pg_replication_slots WHERE slot_name = $1',
        [slot, lsnText(tx.endLsn)],
      )
      return s?.ok === true
    },
    { what: 'the confirmation' },
  )
  expect(await backend.wal.slotStats(outbox)).toMatchObject({ slot, active: true })
}

/** `moveToTable` writes rows; a row already there stays as it is. */
async function expectMoveToTableKeepsRows(
  suite: BackendSuite,
  backend: WalBackend,
  outbox: Outbox,
  tx: WalTransaction,
): Promise<void> {
  const row = tx.rows[0]!
  await backend.wal.moveToTable(outbox.table, [
    { row, state: 'pending', attempts: 1, delayMs: 0, error: 'boom' },
  ])
  await backend.wal.moveToTable(outbox.table, [
    { row, state: 'dead', attempts: 5, delayMs: 0, error: 'again' },
  ])
  expect(await suite.opened.sql.row(outbox.table.name, row.id)).toMatchObject({
    state: 'pending',
    attempts: 1,
    last_error: 'boom',
  })
}
