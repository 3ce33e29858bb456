import type { Outbox } from '../outbox/define-outbox.js'
import type { OutboxWal, WalReader, WalReadHandlers } from '../protocol/wal.js'
import type { SafeLogger } from '../telemetry/logger.js'
import { backoffDelay, SETTLE_BACKOFF } from './backoff.js'

/** What the connector calls (see {@link WalConnector}). */
export interface WalConnectorDeps {
  readonly wal: OutboxWal
  readonly outbox: Outbox
  readonly log: SafeLogger
  reportError(error: unknown): void
  /** The stream's events, each called only after {@link WalConnectorDeps.onReady}. */
  readonly stream: Omit<WalReadHandlers, 'onEnd'>
  /** The slot is held and its dispatch mark read: the stream's events follow. */
  onReady(reader: WalReader, dispatchMark: bigint): void
  /** The stream ended (the connector reads again after a backoff). */
  onEnd(error: unknown): void
}

/** How long a standby waits before asking for the slot again. */
const STANDBY_RETRY_MS = 1_000

/**
 * Gets and keeps the outbox's replication stream for the slot source: asks for the slot, stands by
 * (asking every second) while another relay reads it, reads the dispatch mark once the slot is
 * held, and asks again after a backoff when the stream or a read fails. Events the stream sends
 * before the mark is read are held and replayed in order after {@link WalConnectorDeps.onReady}.
 */
export class WalConnector {
  #running = false
  #failures = 0
  #standbyLogged = false
  #timer: ReturnType<typeof setTimeout> | undefined
  /** Stream events that came before the dispatch mark was read; `undefined` once it was. */
  #held: (() => void)[] | undefined
  #reader: WalReader | undefined

  /** @param deps - the backend's WAL transport and the source's reactions */
  constructor(private readonly deps: WalConnectorDeps) {}

  /** Whether the stream is held and its mark read (its events flow). */
  get ready(): boolean {
    return this.#reader !== undefined && this.#held === undefined
  }

  /** Starts asking for the slot. */
  start(): void {
    this.#running = true
    void this.#connect()
  }

  /** Stops asking; returns the reader, if one was held (the caller closes it). */
  stop(): WalReader | undefined {
    this.#running = false
    clearTimeout(this.#timer)
    const reader = this.#reader
    this.#reader = undefined
    return reader
  }

  async #connect(): Promise<void> {
    if (!this.#running) return
    this.#held = []
    let reader: WalReader | 'busy'
    try {
      reader = await this.deps.wal.read(this.deps.outbox, this.#handlers())
    } catch (error) {
      this.#held = undefined
      return this.#failed(error, 'reading the replication slot failed')
    }
    if (reader === 'busy') return this.#standBy()
    if (!this.#running) return void reader.close().catch(() => {})
    this.#reader = reader
    // Read once the slot is ours: an earlier reader handed nothing over past what it committed.
    let mark: bigint
    try {
      mark = await this.deps.wal.readDispatchMark(this.deps.outbox)
    } catch (error) {
      if (this.#reader !== reader) return
      this.#reader = undefined
      this.#held = undefined
      await reader.close().catch(() => {})
      return this.#failed(error, "reading the replication slot's dispatch mark failed")
    }
    if (this.#reader !== reader) return // the stream ended meanwhile (read again) or we stopped
    this.#failures = 0
    this.#standbyLogged = false
    this.deps.log.log('info', { table: this.deps.outbox.table.display }, 'reading the replication slot')
    this.deps.onReady(reader, mark)
    const held = this.#held ?? []
    this.#held = undefined
    for (const event of held) event()
  }

  #handlers(): WalReadHandlers {
    const { stream } = this.deps
    return {
      onTransaction: (tx) => this.#inOrder(() => stream.onTransaction(tx)),
      onProgress: (lsn) => this.#inOrder(() => stream.onProgress(lsn)),
      onInvalid: (reason) => this.#inOrder(() => stream.onInvalid(reason)),
      onEnd: (error) => this.#onEnd(error),
    }
  }

  /** Runs a stream event now, or after the dispatch mark was read (in stream order). */
  #inOrder(event: () => void): void {
    if (this.#held) this.#held.push(event)
    else event()
  }

  #standBy(): void {
    this.#held = undefined
    if (!this.#standbyLogged)
      this.deps.log.log(
        'info',
        { table: this.deps.outbox.table.display },
        'another relay reads the replication slot; standing by',
      )
    this.#standbyLogged = true
    this.#retry(STANDBY_RETRY_MS)
  }

  #onEnd(error: unknown): void {
    this.#reader = undefined
    this.#held = undefined
    this.deps.onEnd(error)
    if (!this.#running) return
    this.#failures++
    const retryInMs = Math.min(backoffDelay(SETTLE_BACKOFF, this.#failures), 5_000)
    this.deps.reportError(error ?? new Error('the replication stream ended'))
    this.deps.log.log(
      'warn',
      { table: this.deps.outbox.table.display, err: error, retryInMs },
      `the replication stream ended; reading again in ${retryInMs} ms`,
    )
    this.#retry(retryInMs)
  }

  #failed(error: unknown, what: string): void {
    this.#failures++
    this.deps.reportError(error)
    const retryInMs = backoffDelay(SETTLE_BACKOFF, this.#failures)
    this.deps.log.log(
      'warn',
      { table: this.deps.outbox.table.display, err: error, retryInMs },
      `${what}; retrying in ${retryInMs} ms`,
    )
    this.#retry(retryInMs)
  }

  #retry(ms: number): void {
    if (!this.#running) return
    this.#timer = setTimeout(() => void this.#connect(), ms)
    this.#timer.unref?.()
  }
}
