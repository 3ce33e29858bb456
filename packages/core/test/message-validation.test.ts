// What publish refuses before any statement is sent (outbox/message-fields.ts): unknown fields, a
// key that is not a string, and lone UTF-16 surrogates anywhere they would be stored. Pure logic:
// prepareMessages is the step every adapter runs first; the conformance publish suite checks the
// same on every adapter and database (nothing written, the transaction still usable).
import { defineOutbox, isOutboxError } from '@outboxkit/core'
import { prepareMessages, prepareMessagesSync } from '@outboxkit/core/adapter'
import { describe, expect, test } from 'vitest'

const outbox = defineOutbox({ table: 'outbox' })
const ok = { topic: 't', payload: { ok: true } }

async function refusal(message: unknown, many = false): Promise<string> {
  const messages = many ? [ok, message] : [message]
  let err: unknown
  try {
    await prepareMessages(outbox, messages, 'pg')
  } catch (e) {
    err = e
  }
  expect(isOutboxError(err, 'INVALID_MESSAGE'), String(err)).toBe(true)
  // The synchronous preparation (better-sqlite3) refuses the same, the same way.
  let syncErr: unknown
  try {
    prepareMessagesSync(outbox, messages, 'pg')
  } catch (e) {
    syncErr = e
  }
  expect((syncErr as Error | undefined)?.message).toBe((err as Error).message)
  return (err as Error).message
}

describe('unknown fields', () => {
  test.each<[string, Record<string, unknown>, string]>([
    ['delay for delayMs', { ...ok, delay: 60_000 }, '"delay" (did you mean "delayMs"?)'],
    ['dedupe for dedupKey', { ...ok, dedupkey: 'd' }, '"dedupkey" (did you mean "dedupKey"?)'],
    ['header for headers', { ...ok, header: { a: 'b' } }, '"header" (did you mean "headers"?)'],
    ['Key for key', { ...ok, Key: 'k' }, '"Key" (did you mean "key"?)'],
    ['a field of no message', { ...ok, priority: 1 }, '"priority". A message has'],
  ])('%s → INVALID_MESSAGE naming it', async (_label, message, expected) => {
    const text = await refusal(message)
    expect(text).toMatch(/^\[outboxkit\] \[pg\] message: unknown field /)
    expect(text).toContain(expected)
    expect(text).toContain('A message has topic, payload, key, headers, dedupKey, delayMs')
    expect(text).toContain('Nothing was written.')
  })

  test('in publishMany the message is named by its index', async () => {
    expect(await refusal({ ...ok, delay: 1 }, true)).toMatch(
      /^\[outboxkit\] \[pg\] message #1: unknown field "delay"/,
    )
  })

  test('only own enumerable fields count; every documented field passes', async () => {
    const withProto = Object.assign(Object.create({ inherited: true }), ok)
    const hidden = Object.defineProperty({ ...ok }, 'internal', { value: 1, enumerable: false })
    const all = { topic: 't', payload: 1, key: 'k', headers: { a: 'b' }, dedupKey: 'd', delayMs: 5 }
    const prepared = await prepareMessages(outbox, [withProto, hidden, all], 'pg')
    expect(prepared.map((p) => p.topic)).toEqual(['t', 't', 't'])
    expect(prepared[2]).toMatchObject({ key: 'k', dedupKey: 'd', delayMs: 5, headers: '{"a":"b"}' })
  })
})

describe('key', () => {
  test.each<[string, unknown]>([
    ['a number', 42],
    ['a bigint', 42n],
    ['a boolean', true],
    ['an object', { id: 1 }],
  ])('%s is refused (it used to be stringified)', async (_label, key) => {
    const text = await refusal({ ...ok, key })
    expect(text).toContain('key must be a string (or null)')
    expect(text).toContain('String(order.id)')
  })

  test('a string, null or no key pass', async () => {
    const prepared = await prepareMessages(outbox, [{ ...ok, key: '42' }, { ...ok, key: null }, ok], 'pg')
    expect(prepared.map((p) => p.key)).toEqual(['42', null, null])
  })
})

describe('lone surrogates (a string cut in the middle of an emoji)', () => {
  const cut = '🚀 launch'.slice(0, 1) // '\ud83d'
  test.each<[string, Record<string, unknown>, string]>([
    ['the payload itself', { ...ok, payload: cut }, 'payload contains a lone surrogate (\\ud83d)'],
    [
      'a nested value',
      { ...ok, payload: { a: [{ b: `x${cut}` }] } },
      'payload.a[0].b contains a lone surrogate',
    ],
    [
      'a low half alone',
      { ...ok, payload: { a: '\udc00' } },
      'payload.a contains a lone surrogate (\\udc00)',
    ],
    [
      'a nested key',
      { ...ok, payload: { a: { [`k${cut}`]: 1 } } },
      'a key of payload.a contains a lone surrogate',
    ],
    ['an odd key name', { ...ok, payload: { 'x-y': [cut] } }, 'payload["x-y"][0] contains a lone surrogate'],
    ['a header value', { ...ok, headers: { note: cut } }, 'headers["note"] contains a lone surrogate'],
    [
      'a header name',
      { ...ok, headers: { [cut]: 'v' } },
      'the name of headers["\\ud83d"] contains a lone surrogate',
    ],
    ['the key', { ...ok, key: `order-${cut}` }, 'key contains a lone surrogate'],
    ['the topic', { topic: `t${cut}`, payload: 1 }, 'topic contains a lone surrogate'],
    ['the dedupKey', { ...ok, dedupKey: cut }, 'dedupKey contains a lone surrogate'],
  ])('in %s → INVALID_MESSAGE saying where and what to do', async (_label, message, where) => {
    const text = await refusal(message)
    expect(text).toContain(where)
    expect(text).toContain('toWellFormed()')
    expect(text).toContain('Nothing was written.')
  })

  test('valid pairs, and text that only looks like an escape, pass unchanged', async () => {
    const payload = { emoji: '🚀 日本語 ✓', text: 'a literal \\ud83d, not a surrogate', '🔑': '\\\\ud83d' }
    const [p] = await prepareMessages(
      outbox,
      [{ ...ok, payload, key: 'ключ-🔑', headers: { e: '🚀' } }],
      'pg',
    )
    expect(JSON.parse(p!.payload)).toEqual(payload)
    expect(p!.key).toBe('ключ-🔑')
  })

  test('a NUL character is still refused, in the payload and in the other fields', async () => {
    expect(await refusal({ ...ok, payload: { a: 'x\u0000' } })).toContain('NUL character')
    expect(await refusal({ ...ok, key: 'k\u0000' })).toContain('key contains a NUL character')
    expect(await refusal({ ...ok, headers: { a: '\u0000' } })).toContain('NUL character')
  })
})
