import { createRelay, type DeliveredMessage, defineOutbox, type OutboxBackend } from '@outboxkit/core'
import { expect, expectTypeOf, test } from 'vitest'
import { z } from 'zod'

// These checks run in `tsc --noEmit` (the repo's typecheck); the test below only keeps vitest happy.
const backend = { claim() {}, settle() {} } as unknown as OutboxBackend

test('handlers are typed from the outbox (checked by tsc)', () => {
  const untyped = defineOutbox({ table: 'x' })
  createRelay(untyped, {
    backend,
    handlers: {
      // Without topics: any topic, and the handler may use its message.
      t: async (m, { signal }) => {
        expectTypeOf(m).toEqualTypeOf<DeliveredMessage<unknown, string>>()
        expectTypeOf(signal).toEqualTypeOf<AbortSignal>()
      },
    },
  })

  const typed = defineOutbox({
    topics: { 'a.b': z.object({ n: z.number() }).transform((v) => ({ doubled: v.n * 2 })) },
  })
  createRelay(typed, {
    backend,
    handlers: {
      'a.b': (m) => {
        expectTypeOf(m.payload).toEqualTypeOf<{ doubled: number }>()
        expectTypeOf(m.topic).toEqualTypeOf<'a.b'>()
      },
    },
  })
  // @ts-expect-error a topic the outbox does not define
  expect(() => createRelay(typed, { backend, handlers: { nope: () => {} } })).toThrow(/does not define/)
})
