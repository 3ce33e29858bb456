import type { Outbox, OutboxBackend, OutboxState } from '@outboxkit/core'
import type {
  ClaimedRow,
  ClaimRequest,
  ExtendLeaseRequest,
  PurgeRequest,
  RedriveRequest,
  SettleRequest,
  WakeHandlers,
  WakeSubscription,
} from '@outboxkit/core/adapter'

/** A row of the {@link MemoryBackend}, with the columns of the outbox table. */
export interface MemoryRow {
  id: string
  topic: string
  key: string | null
  payload: string
  headers: string
  state: OutboxState
  attempts: number
  availableAt: number
  createdAt: number
  lastError: string | null
  /** Set for messages of ordered topics: their order within the key. */
  seq: number | null
}

/** A message to put into a {@link MemoryBackend}, as `publish` would. */
export interface MemoryMessage {
  topic: string
  payload?: unknown
  key?: string | null
  headers?: Record<string, string>
  delayMs?: number
}

/** The statements a test can make fail once, to see how the relay reacts. */
export type MemoryOperation = 'claim' | 'settle' | 'extendLease'

/**
 * An {@link OutboxBackend} that keeps the outbox in memory and follows the protocol's rules
 * (disjoint claims with a lease, attempts counted at claim, dead-letter at claim, fenced settles
 * and lease extensions, ordered keys claimed head first): for unit tests of the relay's logic that
 * run in milliseconds. Not a database: the conformance suites run on the real ones.
 */
export class MemoryBackend implements OutboxBackend {
  readonly name = 'memory'
  readonly dialect = 'postgres' as const
  /** The rows, by id. */
  readonly rows = new Map<string, MemoryRow>()
  /** Calls per operation, for assertions about round trips. */
  readonly calls = { claim: 0, settle: 0, extendLease: 0 }
  /** The clock claims, leases and delays use (Date.now(), so fake timers move it). */
  now: () => number = () => Date.now()
  #orderedTopics: ReadonlySet<string> = new Set()
  #nextId = 1
  #nextSeq = 1
  #failures: { op: MemoryOperation; error: unknown }[] = []
  #listeners = new Set<WakeHandlers>()
  closed = 0
  /** When set, `listen` reports LISTEN unavailable with this reason (as a pooled backend's probe would). */
  listenUnavailable: string | undefined

  /** Records which topics are ordered (as the table's `seq` column would). */
  async migrate(outbox: Outbox): Promise<void> {
    this.#orderedTopics = outbox.orderedTopics
  }

  /** Inserts messages as committed `publish` calls would, waking listeners; returns their ids. */
  publish(...messages: MemoryMessage[]): string[] {
    const now = this.now()
    const ids = messages.map((m) => {
      const id = `m${String(this.#nextId++).padStart(6, '0')}`
      this.rows.set(id, {
        id,
        topic: m.topic,
        key: m.key ?? null,
        payload: JSON.stringify(m.payload ?? {}),
        headers: JSON.stringify(m.headers ?? {}),
        state: 'pending',
        attempts: 0,
        availableAt: now + (m.delayMs ?? 0),
        createdAt: now,
        lastError: null,
        seq: this.#orderedTopics.has(m.topic) ? this.#nextSeq++ : null,
      })
      return id
    })
    for (const l of this.#listeners) l.onWake()
    return ids
  }

  /** Makes the next call of `op` reject with `error`. */
  failNext(op: MemoryOperation, error: unknown = new Error(`memory backend: ${op} failed`)): void {
    this.#failures.push({ op, error })
  }

  /** The rows in a state. */
  inState(state: OutboxState): MemoryRow[] {
    return [...this.rows.values()].filter((r) => r.state === state)
  }

  async claim(request: ClaimRequest): Promise<ClaimedRow[]> {
    this.calls.claim++
    this.#maybeFail('claim')
    const now = this.now()
    const due = [...this.rows.values()]
      .filter((r) => request.topics.includes(r.topic) && isDue(r, now))
      .filter(
        (r) => !request.ordering || r.seq === null || this.#isHead(r, request.ordering.continueAfterDead),
      )
      .sort((a, b) => a.availableAt - b.availableAt || a.id.localeCompare(b.id))
      .slice(0, request.limit)
    return due.map((r) => this.#claimRow(r, request, now))
  }

  async settle(request: SettleRequest): Promise<string[]> {
    this.calls.settle++
    this.#maybeFail('settle')
    const applied: string[] = []
    const now = this.now()
    for (const s of request.settlements) {
      const row = this.rows.get(s.id)
      if (row?.state !== 'processing' || row.attempts !== s.attempts) continue
      applied.push(s.id)
      if (s.outcome === 'delivered') {
        if (request.keepDelivered) Object.assign(row, { state: 'delivered', availableAt: now })
        else this.rows.delete(s.id)
      } else if (s.outcome === 'retry') {
        Object.assign(row, { state: 'pending', availableAt: now + s.delayMs, lastError: s.error })
      } else {
        Object.assign(row, { state: 'dead', availableAt: now, lastError: s.error })
      }
    }
    return applied
  }

  async extendLease(request: ExtendLeaseRequest): Promise<string[]> {
    this.calls.extendLease++
    this.#maybeFail('extendLease')
    const until = this.now() + request.leaseMs
    const extended: string[] = []
    for (const { id, attempts } of request.rows) {
      const row = this.rows.get(id)
      if (row?.state !== 'processing' || row.attempts !== attempts) continue
      row.availableAt = until
      extended.push(id)
    }
    return extended
  }

  async listen(_channel: string, handlers: WakeHandlers): Promise<WakeSubscription> {
    this.#listeners.add(handlers)
    handlers.onConnect?.()
    if (this.listenUnavailable !== undefined) {
      this.#listeners.delete(handlers)
      handlers.onUnavailable?.(this.listenUnavailable)
    }
    return { close: async () => void this.#listeners.delete(handlers) }
  }

  async purge(request: PurgeRequest): Promise<number> {
    const cutoff = this.now() - request.olderThanMs
    let n = 0
    for (const [id, row] of this.rows) {
      if ((request.states as readonly OutboxState[]).includes(row.state) && row.availableAt <= cutoff) {
        this.rows.delete(id)
        n++
      }
    }
    return n
  }

  async redrive(request: RedriveRequest): Promise<number> {
    let n = 0
    for (const row of this.inState('dead')) {
      if (request.ids && !request.ids.includes(row.id)) continue
      if (request.topics && !request.topics.includes(row.topic)) continue
      Object.assign(row, { state: 'pending', attempts: 0, availableAt: this.now() })
      n++
    }
    return n
  }

  async close(): Promise<void> {
    this.closed++
  }

  #maybeFail(op: MemoryOperation): void {
    const i = this.#failures.findIndex((f) => f.op === op)
    if (i < 0) return
    const [failure] = this.#failures.splice(i, 1)
    throw failure!.error
  }

  /** No row of the key with a smaller seq is pending, processing or (blocking) dead. */
  #isHead(row: MemoryRow, continueAfterDead: readonly string[]): boolean {
    for (const other of this.rows.values()) {
      if (other.key !== row.key || other.seq === null || other.seq >= row.seq!) continue
      if (other.state === 'pending' || other.state === 'processing') return false
      if (other.state === 'dead' && !continueAfterDead.includes(other.topic)) return false
    }
    return true
  }

  #claimRow(row: MemoryRow, request: ClaimRequest, now: number): ClaimedRow {
    const ordered = row.seq !== null ? { ordered: true } : {}
    if (row.attempts >= request.maxAttempts) {
      Object.assign(row, {
        state: 'dead',
        availableAt: now,
        lastError: row.lastError ?? 'lease expired on the final attempt',
      })
      return { ...claimed(row), state: 'dead', lastError: row.lastError, ...ordered }
    }
    Object.assign(row, {
      state: 'processing',
      attempts: row.attempts + 1,
      availableAt: now + request.leaseMs,
    })
    return { ...claimed(row), state: 'processing', ...ordered }
  }
}

function isDue(row: MemoryRow, now: number): boolean {
  return (row.state === 'pending' || row.state === 'processing') && row.availableAt <= now
}

function claimed(row: MemoryRow): Omit<ClaimedRow, 'state'> {
  const { id, topic, key, payload, headers, attempts, createdAt } = row
  return { id, topic, key, payload, headers, attempts, createdAtMs: createdAt }
}

/** A fresh {@link MemoryBackend}. */
export function memoryBackend(): MemoryBackend {
  return new MemoryBackend()
}
