import { expect, test } from 'vitest'
import { expectCode, type PublishSuite } from './suite.js'

/** Publish tests: bad input is refused before any statement and the transaction stays usable. */
export function registerBadInputTests<TTx>(suite: PublishSuite<TTx>): void {
  const { name, publish, publishMany, count } = suite
  test('bad input is refused before any statement: nothing is written and the transaction stays usable', async () => {
    const { ctx, outbox } = suite.opened
    const cut = '🚀'.slice(0, 1) // a lone surrogate: a string cut in the middle of an emoji
    const rows: [label: string, message: Record<string, unknown>, says: string][] = [
      [
        'an unknown field (delay for delayMs)',
        { topic: 'bad-input', payload: 1, delay: 60_000 },
        '"delayMs"',
      ],
      ['a key that is not a string', { topic: 'bad-input', payload: 1, key: 42 }, 'key must be a string'],
      [
        'a lone surrogate in a nested payload value',
        { topic: 'bad-input', payload: { a: [{ b: cut }] } },
        'payload.a[0].b',
      ],
      [
        'a lone surrogate in a payload key',
        { topic: 'bad-input', payload: { [`k${cut}`]: 1 } },
        'a key of payload',
      ],
      [
        'a lone surrogate in a header',
        { topic: 'bad-input', payload: 1, headers: { h: cut } },
        'headers["h"]',
      ],
      ['a lone surrogate in the key', { topic: 'bad-input', payload: 1, key: `k${cut}` }, 'key contains'],
      ['a lone surrogate in the topic', { topic: `bad-input${cut}`, payload: 1 }, 'topic contains'],
      [
        'a lone surrogate in the dedupKey',
        { topic: 'bad-input', payload: 1, dedupKey: cut },
        'dedupKey contains',
      ],
    ]
    // A synchronous driver (better-sqlite3) throws these synchronously, inside the transaction.
    const attempt = (fn: () => Promise<unknown>) => {
      try {
        return fn()
      } catch (err) {
        return Promise.reject(err)
      }
    }
    const before = await count()
    const good = await ctx.transaction(async (tx) => {
      for (const [label, message, says] of rows) {
        const one = await expectCode(
          attempt(() => publish(outbox, tx, message as never)),
          'INVALID_MESSAGE',
        )
        expect(one.message, label).toContain(`[outboxkit] [${name}]`)
        expect(one.message, label).toContain(says)
        const many = await expectCode(
          attempt(() =>
            publishMany(outbox, tx, [{ topic: 'bad-input', payload: 'first' }, message] as never),
          ),
          'INVALID_MESSAGE',
        )
        expect(many.message, label).toContain('message #1')
      }
      // The refusals sent nothing, so the transaction is still open and usable: this publish
      // commits with it (a statement that had failed on PostgreSQL would have aborted it).
      return publish(outbox, tx, { topic: 'bad-input', payload: 'after the refusals' })
    })
    expect(good.published).toBe(true)
    expect(await count({ id: good.id })).toBe(1)
    expect(await count({ topic: 'bad-input' })).toBe(1)
    expect(await count()).toBe(before + 1)
  })
}
