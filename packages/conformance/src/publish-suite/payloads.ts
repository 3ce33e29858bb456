import { expect, test } from 'vitest'
import { expectCode, type PublishSuite } from './suite.js'

/** Publish tests: payloads round-trip exactly; payloads that are not JSON are refused. */
export function registerPayloadTests<TTx>(suite: PublishSuite<TTx>): void {
  const { publish, count, rowOf } = suite
  test('unicode and a 1 MiB payload round-trip exactly', async () => {
    const { ctx, outbox } = suite.opened
    const text = 'héllo wörld ✓ 日本語 🚀 \\ " \' \n\t'
    const big = { blob: 'x'.repeat(1024 * 1024), text }
    const a = await ctx.transaction((tx) =>
      publish(outbox, tx, { topic: 'big', payload: big, key: 'ключ-🔑', headers: { 'x-note': text } }),
    )
    const row = await rowOf(a.id)
    expect(JSON.parse(row!.payload_text as string)).toEqual(big)
    expect(row!.key).toBe('ключ-🔑')
    expect(JSON.parse(row!.headers_text)['x-note']).toBe(text)
    const s = await ctx.transaction((tx) => publish(outbox, tx, { topic: 'big', payload: 'just a string' }))
    expect(JSON.parse((await rowOf(s.id))!.payload_text as string)).toBe('just a string')
  })

  test('payloads that are not JSON are refused with INVALID_MESSAGE and nothing is written', async () => {
    const { ctx, outbox } = suite.opened
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic.self = cyclic
    for (const payload of [
      10n,
      { n: 1n },
      cyclic,
      () => 1,
      { f: () => 1 },
      Number.NaN,
      undefined,
      new Map([[1, 2]]),
    ]) {
      await expectCode(
        ctx.transaction((tx) => publish(outbox, tx, { topic: 'nonjson', payload })),
        'INVALID_MESSAGE',
      )
    }
    await expectCode(
      ctx.transaction((tx) => publish(outbox, tx, { topic: '', payload: 1 })),
      'INVALID_MESSAGE',
    )
    await expectCode(
      ctx.transaction((tx) =>
        publish(outbox, tx, { topic: 'nonjson', payload: 1, headers: { a: 1 as unknown as string } }),
      ),
      'INVALID_MESSAGE',
    )
    await expectCode(
      ctx.transaction((tx) => publish(outbox, tx, { topic: 'nonjson', payload: 1, delayMs: -1 })),
      'INVALID_MESSAGE',
    )
    expect(await count({ topic: 'nonjson' })).toBe(0)
  })
}
