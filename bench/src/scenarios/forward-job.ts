// The two contenders of the forward scenario, each in a child process of its own: a relay on
// defaults draining the outbox backlog into the broker through the outboxkit forwarder, and the
// bare client publishing the same number of messages with confirmations, `window` at a time.
import { randomUUID } from 'node:crypto'
import { createRelay, defineOutbox, type Handler } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import { withProfile } from '../profiler.js'
import { waitUntil } from '../stats.js'
import { OUTBOX_TABLE, payloadFor, TOPIC } from '../workload.js'
import { type BareMessage, type BrokerName, openTarget } from './forward-brokers.js'

/** The contenders of the forward scenario. */
export type ForwardContender = 'relay' | 'noop' | 'bare'

/** One job of the forward scenario. */
export interface ForwardJobSpec {
  /** relay: through the forwarder; noop: the same relay with a no-op handler (no broker); bare: the client alone. */
  contender: ForwardContender
  broker: BrokerName
  /** The bench database (the relay drains its backlog). */
  url: string
  count: number
  /** Bare client: confirmations awaited at once. */
  window: number
  profileFile?: string
}

/** What one job measured. */
export interface ForwardJobResult {
  messages: number
  seconds: number
  perSecond: number
  cpuUserMs: number
  cpuSystemMs: number
  /** What the broker held at the end: must equal `messages`. */
  stored: number
}

/** Times `run` (under the profiler when asked) and returns the rate and CPU. */
async function timed(spec: ForwardJobSpec, run: () => Promise<number>, stored: () => Promise<number>) {
  return withProfile(spec.profileFile, async (): Promise<ForwardJobResult> => {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    const messages = await run()
    const seconds = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    return {
      messages,
      seconds,
      perSecond: messages / seconds,
      cpuUserMs: cpu.user / 1000,
      cpuSystemMs: cpu.system / 1000,
      stored: await stored(),
    }
  })
}

/** Runs one contender against its own broker target, removed at the end. */
export async function runForwardJob(spec: ForwardJobSpec): Promise<ForwardJobResult> {
  if (spec.contender === 'noop')
    return drain(
      spec,
      () => {},
      async () => spec.count,
    )
  const target = await openTarget(spec.broker, `okbench_${process.pid}_${spec.contender}`)
  try {
    if (spec.contender === 'bare') {
      const messages: BareMessage[] = Array.from({ length: spec.count }, (_, i) => ({
        id: randomUUID(),
        topic: TOPIC,
        payload: payloadFor(i),
      }))
      await target.bare({ id: randomUUID(), topic: TOPIC, payload: payloadFor(-1) })
      let next = 0
      const worker = async () => {
        while (next < messages.length) await target.bare(messages[next++]!)
      }
      return await timed(
        spec,
        async () => {
          await Promise.all(Array.from({ length: spec.window }, worker))
          return messages.length
        },
        async () => (await target.stored()) - 1,
      )
    }
    return await drain(spec, target.forwarder(), () => target.stored())
  } finally {
    await target.close()
  }
}

/** The relay on defaults draining the backlog with `handler`, timed to the last delivered settle. */
async function drain(spec: ForwardJobSpec, handler: Handler, stored: () => Promise<number>) {
  const outbox = defineOutbox({ table: OUTBOX_TABLE })
  const backend = pgBackend({ connectionString: spec.url })
  const relay = createRelay(outbox, { backend, handlers: { [TOPIC]: handler } })
  // Warm the pool outside the timed section, as the bare client warms its connection.
  await backend.claim({ table: outbox.table, topics: ['warm-up'], limit: 1, leaseMs: 1, maxAttempts: 1 })
  const result = await timed(
    spec,
    async () => {
      await relay.start()
      await waitUntil('the forward drain', () => relay.stats.delivered >= spec.count, 600_000, 2)
      return relay.stats.delivered
    },
    stored,
  )
  await relay.stop()
  return result
}
