import { type OutboxStats, summarizeStats } from '../admin/stats.js'
import type { Outbox } from '../outbox/define-outbox.js'
import type { OutboxBackend } from '../protocol/backend.js'
import { type Api, type Instruments, instruments } from '../telemetry/instruments.js'
import type { SafeLogger } from '../telemetry/logger.js'

/** What the queue gauges read and report to. */
export interface QueueGaugeContext {
  readonly outbox: Outbox
  readonly backend: OutboxBackend
  readonly topics: readonly string[]
  readonly keepDelivered: boolean
  readonly log: SafeLogger
  /** Shortest time between two stats statements. */
  readonly statsIntervalMs: number
  /** The attributes of every observation, and those of one topic. */
  readonly base: Record<string, string>
  attrs(topic: string): Record<string, string>
}

interface BatchResult {
  observe(observable: unknown, value: number, attributes?: Record<string, string>): void
}

/**
 * The queue gauges (depth by topic and state, oldest pending age, oldest due lag), observed from
 * one `stats` statement per collection at most every `statsIntervalMs`; collections in between
 * reuse the last read.
 */
export class QueueGauges {
  #last: { at: number; value: OutboxStats } | undefined
  #reading: Promise<OutboxStats | undefined> | undefined
  #registered: { meter: Instruments['meter']; observables: unknown[]; callback: unknown } | undefined

  /** @param ctx - the backend to read and the attributes to report */
  constructor(private readonly ctx: QueueGaugeContext) {}

  /** Registers the gauges on the API's meter (once; not when the backend has no `stats`). */
  register(a: Api): void {
    const { backend, log } = this.ctx
    if (this.#registered) return
    if (typeof backend.stats !== 'function') {
      log.log(
        'debug',
        { backend: backend.name },
        `queue gauges off: the ${backend.name} backend has no stats()`,
      )
      return
    }
    const m = instruments(a)
    const callback = (result: BatchResult) => this.#observe(m, result)
    const observables = [m.queueDepth, m.oldestPendingAge, m.oldestDueLag, m.slotRetained, m.slotLag]
    m.meter.addBatchObservableCallback(callback as never, observables)
    this.#registered = { meter: m.meter, observables, callback }
  }

  /** Unregisters the gauges. */
  unregister(): void {
    const g = this.#registered
    this.#registered = undefined
    if (g) g.meter.removeBatchObservableCallback(g.callback as never, g.observables as never)
  }

  async #observe(m: Instruments, result: BatchResult): Promise<void> {
    const stats = await this.#read()
    if (!stats) return
    const { attrs, base } = this.ctx
    const states = this.ctx.keepDelivered
      ? (['pending', 'processing', 'dead', 'delivered'] as const)
      : (['pending', 'processing', 'dead'] as const)
    const seen = new Set<string>()
    for (const t of stats.topics) {
      seen.add(t.topic)
      for (const state of states)
        result.observe(m.queueDepth, t[state] ?? 0, { ...attrs(t.topic), 'outboxkit.state': state })
    }
    // The relay's own topics always report, so an empty queue reads 0, not "no data".
    for (const topic of this.ctx.topics) {
      if (seen.has(topic)) continue
      for (const state of states)
        result.observe(m.queueDepth, 0, { ...attrs(topic), 'outboxkit.state': state })
    }
    result.observe(m.oldestPendingAge, (stats.oldestPendingAgeMs ?? 0) / 1000, base)
    result.observe(m.oldestDueLag, (stats.oldestDueLagMs ?? 0) / 1000, base)
    if (stats.slot) {
      result.observe(m.slotRetained, stats.slot.retainedBytes, base)
      result.observe(m.slotLag, stats.slot.lagBytes, base)
    }
  }

  #read(): Promise<OutboxStats | undefined> {
    const { outbox, backend, keepDelivered, log, statsIntervalMs } = this.ctx
    const last = this.#last
    if (last && Date.now() - last.at < statsIntervalMs) return Promise.resolve(last.value)
    this.#reading ??= backend.stats!({ table: outbox.table, includeDelivered: keepDelivered })
      .then(
        async (rows) => {
          const summary = summarizeStats(rows, keepDelivered)
          // The WAL transport's slot (docs/wal.md): its retained WAL is the number to alert on.
          const slot =
            outbox.transport === 'wal' && backend.wal ? await backend.wal.slotStats(outbox) : undefined
          this.#last = { at: Date.now(), value: slot === undefined ? summary : { ...summary, slot } }
          return this.#last.value
        },
        (error) => {
          log.log(
            'warn',
            { err: error, table: outbox.table.display },
            'queue gauges: the stats query failed; no queue gauges this time',
          )
          return undefined
        },
      )
      .finally(() => {
        this.#reading = undefined
      })
    return this.#reading
  }
}
