import { defineOutbox, migrate, type Outbox } from '@outboxkit/core'
import { walNames } from '@outboxkit/core/adapter'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { uniqueTableName } from '../database.js'
import { expectCode, type PublishSuite, Rollback } from './suite.js'

/** One message read from a `test_decoding` slot: its prefix and content. */
interface DecodedMessage {
  prefix: string
  content: unknown[]
}

const MESSAGE = /^message: transactional: 1 prefix: (.*), sz: \d+ content:(.*)$/s

type SkipContext = { skip(note?: string): never }

/** The WAL outbox of a group, its `test_decoding` slot, and what the slot decoded. */
interface WalFixture<TTx> {
  readonly suite: PublishSuite<TTx>
  /** The WAL outbox (PostgreSQL only). */
  outbox: Outbox | undefined
  /** The outbox's slot, created when the server has wal_level = logical (not PGlite). */
  slot: string | undefined
  /** The messages of this outbox the slot decoded since the last call. */
  decoded(): Promise<DecodedMessage[]>
  /** The WAL outbox and its slot, or the test is skipped (not PostgreSQL, or no logical decoding). */
  withSlot(context: SkipContext): Outbox
}

/** Registers the group's setup and teardown, and returns its fixture. */
function walFixture<TTx>(suite: PublishSuite<TTx>): WalFixture<TTx> {
  const inspect = (text: string, params?: unknown[]) => suite.opened.ctx.inspect(text, params)
  const f: WalFixture<TTx> = {
    suite,
    outbox: undefined,
    slot: undefined,
    async decoded() {
      const rows = await inspect('SELECT data FROM pg_logical_slot_get_changes($1, NULL, NULL)', [f.slot])
      const out: DecodedMessage[] = []
      for (const { data } of rows) {
        const m = MESSAGE.exec(String(data))
        // The slot decodes the whole database: other tests' outboxes publish there too.
        if (m && m[1] === walNames(f.outbox!.table).prefix)
          out.push({ prefix: m[1]!, content: JSON.parse(m[2]!) })
      }
      return out
    },
    withSlot(context) {
      if (!f.outbox || !f.slot) context.skip('needs PostgreSQL with wal_level = logical')
      return f.outbox!
    },
  }
  beforeAll(async () => {
    if ((suite.opened.ctx.dialect ?? 'postgres') !== 'postgres') return
    const table = uniqueTableName(`${suite.name}_wal`)
    await migrate(defineOutbox({ table }), suite.opened.ctx.backend)
    f.outbox = defineOutbox({ table, transport: 'wal' })
    const [level] = await inspect("SELECT current_setting('wal_level') AS l")
    if (level?.l !== 'logical') return
    f.slot = walNames(f.outbox.table).slot
    await inspect("SELECT pg_create_logical_replication_slot($1, 'test_decoding')", [f.slot])
  })
  afterAll(async () => {
    if (f.slot) await inspect('SELECT pg_drop_replication_slot($1)', [f.slot]).catch(() => {})
    if (f.outbox) await suite.opened.sql.drop(f.outbox.table.name).catch(() => {})
  })
  return f
}

/**
 * Publish tests of the WAL transport (docs/wal.md) on PostgreSQL adapters: with
 * `transport: 'wal'` a publish writes no row and one transactional logical decoding message, the
 * rolled-back ones never reach a slot, a missing slot is refused. Asserted through raw SQL: the
 * outbox's slot is created here with the `test_decoding` plugin, read with
 * `pg_logical_slot_get_changes`, and dropped after the group. Skipped when the server has no
 * `wal_level = logical` (OUTBOXKIT_WAL_SKIPPED, set by the tests' globalSetup).
 */
export function registerWalTests<TTx>(suite: PublishSuite<TTx>): void {
  describe.skipIf(process.env.OUTBOXKIT_WAL_SKIPPED !== undefined)('transport wal', () => {
    const f = walFixture(suite)
    test('publish and publishMany write one WAL message each and no row; a rollback writes none', (context) =>
      expectOneMessageEachNoRow(f, context))
    test("quotes, backslashes, $n, E'' and unicode in payload, key, topic and headers reach the WAL exactly", (context) =>
      expectTextExact(f, context))
    test('dedupKey and delayMs take the table, with the same results', (context) =>
      expectDedupAndDelayTakeTable(f, context))
    test('a transaction handle used after its commit is refused, and nothing reaches the WAL', (context) =>
      expectEscapedHandleRefused(f, context))
    test('without the outbox slot, publish is refused with WAL_UNAVAILABLE and writes nothing', (context) =>
      expectMissingSlotRefused(f, context))
  })
}

/** publish and publishMany write one WAL message each and no row; a rollback writes none. */
async function expectOneMessageEachNoRow<TTx>(f: WalFixture<TTx>, context: SkipContext): Promise<void> {
  const outbox = f.withSlot(context)
  const { ctx } = f.suite.opened
  const one = await ctx.transaction((tx) =>
    f.suite.publish(outbox, tx, { topic: 'w', key: 'k', payload: { n: 1 }, headers: { h: 'v' } }),
  )
  await expect(
    ctx.transaction(async (tx) => {
      await f.suite.publish(outbox, tx, { topic: 'w', payload: { n: 'rolled back' } })
      throw new Rollback()
    }),
  ).rejects.toBeInstanceOf(Rollback)
  const many = await ctx.transaction((tx) =>
    f.suite.publishMany(outbox, tx, [
      { topic: 'w', payload: { n: 2 } },
      { topic: 'w', payload: { n: 3 } },
    ]),
  )
  expect(one.published).toBe(true)
  expect(many.map((r) => r.published)).toEqual([true, true])
  const messages = await f.decoded()
  expect(messages.map((m) => m.prefix)).toEqual([
    walNames(outbox.table).prefix,
    walNames(outbox.table).prefix,
  ])
  expect(messages[0]!.content).toEqual([
    {
      id: one.id,
      topic: 'w',
      key: 'k',
      payload: { n: 1 },
      headers: expect.objectContaining({ h: 'v' }),
      created: expect.any(Number),
    },
  ])
  expect((messages[1]!.content as { id: string }[]).map((m) => m.id)).toEqual(many.map((r) => r.id))
  expect(await f.suite.opened.sql.count(outbox.table.name, {})).toBe(0)
}

/**
 * Text that SQL quoting could break (the pg adapter sends the WAL publish inline, with the simple
 * query protocol) reaches the WAL exactly: read back through `test_decoding`.
 */
async function expectTextExact<TTx>(f: WalFixture<TTx>, context: SkipContext): Promise<void> {
  const outbox = f.withSlot(context)
  const { ctx } = f.suite.opened
  const tricky = `it's \\ a '' \\' "$1" $2 E'x' \\x00 \u00e9 日本 🚀 \n\t end\\`
  const message = {
    topic: `w'$1\\`,
    key: `k'\\$2`,
    payload: { tricky, nested: [tricky, { [tricky]: tricky }] },
    headers: { [`h'$3`]: tricky },
  }
  const published = await ctx.transaction((tx) => f.suite.publish(outbox, tx, message))
  const [decoded] = await f.decoded()
  expect(decoded!.content).toEqual([
    {
      id: published.id,
      topic: message.topic,
      key: message.key,
      payload: message.payload,
      headers: expect.objectContaining(message.headers),
      created: expect.any(Number),
    },
  ])
}

/** dedupKey and delayMs take the table, with the same results. */
async function expectDedupAndDelayTakeTable<TTx>(f: WalFixture<TTx>, context: SkipContext): Promise<void> {
  const outbox = f.withSlot(context)
  const { ctx } = f.suite.opened
  const first = await ctx.transaction((tx) =>
    f.suite.publish(outbox, tx, { topic: 'w', payload: 1, dedupKey: 'wd' }),
  )
  const second = await ctx.transaction((tx) =>
    f.suite.publish(outbox, tx, { topic: 'w', payload: 2, dedupKey: 'wd' }),
  )
  await ctx.transaction((tx) => f.suite.publish(outbox, tx, { topic: 'w', payload: 3, delayMs: 60_000 }))
  expect(second).toEqual({ id: first.id, published: false })
  expect(await f.suite.opened.sql.count(outbox.table.name, {})).toBe(2)
  expect(await f.decoded()).toEqual([])
}

/** A transaction handle used after its commit is refused, and nothing reaches the WAL. */
async function expectEscapedHandleRefused<TTx>(f: WalFixture<TTx>, context: SkipContext): Promise<void> {
  const outbox = f.withSlot(context)
  const { ctx } = f.suite.opened
  if (ctx.undetectableEscapes?.afterCommit) context.skip(ctx.undetectableEscapes.afterCommit)
  let escaped: TTx | undefined
  await ctx.transaction(async (tx) => {
    escaped = tx
  })
  await expectCode(f.suite.publish(outbox, escaped as TTx, { topic: 'w', payload: 1 }), 'NOT_IN_TRANSACTION')
  await expectCode(
    f.suite.publishMany(outbox, escaped as TTx, [{ topic: 'w', payload: 2 }]),
    'NOT_IN_TRANSACTION',
  )
  expect(await f.decoded()).toEqual([])
}

/** Without the outbox slot, publish is refused with WAL_UNAVAILABLE and writes nothing. */
async function expectMissingSlotRefused<TTx>(f: WalFixture<TTx>, context: SkipContext): Promise<void> {
  if (!f.outbox) context.skip('PostgreSQL only')
  const { ctx } = f.suite.opened
  const orphan = defineOutbox({ table: `${f.outbox!.table.name}_noslot`, transport: 'wal' })
  const err = await expectCode(
    ctx.transaction((tx) => f.suite.publish(orphan, tx, { topic: 'w', payload: 1 })),
    'WAL_UNAVAILABLE',
  )
  expect(err.message).toContain(`[outboxkit] [${f.suite.name}]`)
  expect(err.message).toContain('migrate')
  if (f.slot) expect(await f.decoded()).toEqual([])
}
