import type { WalReader, WalReadHandlers } from '../../../protocol/wal.js'
import { decodeWalContent } from './message.js'
import { decodeReplicationChunk, standbyStatusUpdate } from './pgoutput.js'

/** A replication connection in CopyBoth mode, as a driver gives it (see `PostgresExecutor.replicate`). */
export interface ReplicationConnection {
  /** Sends one CopyData message to the server. */
  send(chunk: Buffer): void
  pause(): void
  resume(): void
  /** Ends the connection. */
  close(): Promise<void>
}

/** What a driver reports of a replication connection. */
export interface ReplicationHandlers {
  /** One CopyData message from the server. */
  onData(chunk: Buffer): void
  /** The connection ended (`error` unless it was closed by us). */
  onEnd(error?: unknown): void
}

/** Turns the replication stream into {@link WalReadHandlers} calls and answers the server. */
export class PgoutputReader implements WalReader {
  #connection: ReplicationConnection | undefined
  #confirmed = 0n
  #inTransaction = false
  #rows: ReturnType<typeof decodeWalContent>['rows'] = []
  #closed = false

  /**
   * @param prefix - the outbox's message prefix: messages of other prefixes are skipped
   * @param handlers - what to call
   */
  constructor(
    private readonly prefix: string,
    private readonly handlers: WalReadHandlers,
  ) {}

  /** The driver's handlers for the connection this reader reads. */
  get replicationHandlers(): ReplicationHandlers {
    return {
      onData: (chunk) => this.#onData(chunk),
      onEnd: (error) => {
        if (this.#closed) return
        this.#closed = true
        this.handlers.onEnd(error)
      },
    }
  }

  /** Attaches the connection once the server started streaming. */
  attach(connection: ReplicationConnection): void {
    this.#connection = connection
  }

  #onData(chunk: Buffer): void {
    const event = decodeReplicationChunk(chunk)
    switch (event.kind) {
      case 'begin':
        this.#inTransaction = true
        this.#rows = []
        return
      case 'message': {
        if (!event.transactional || event.prefix !== this.prefix) return
        const decoded = decodeWalContent(event.content.toString('utf8'))
        if (decoded.invalid !== undefined) this.handlers.onInvalid(decoded.invalid)
        for (const row of decoded.rows) this.#rows.push(row)
        return
      }
      case 'commit': {
        this.#inTransaction = false
        const rows = this.#rows
        this.#rows = []
        if (rows.length > 0) this.handlers.onTransaction({ endLsn: event.endLsn, rows })
        else this.handlers.onProgress(event.endLsn)
        return
      }
      case 'keepalive':
        if (!this.#inTransaction && event.walEnd > 0n) this.handlers.onProgress(event.walEnd)
        if (event.replyRequested) this.#send()
        return
      default:
        return
    }
  }

  #send(): void {
    if (this.#closed) return
    try {
      this.#connection?.send(standbyStatusUpdate(this.#confirmed))
    } catch {
      // The connection is failing: onEnd follows.
    }
  }

  /** Confirms `lsn` (never backwards). */
  confirm(lsn: bigint): void {
    if (lsn <= this.#confirmed) return
    this.#confirmed = lsn
    this.#send()
  }

  pause(): void {
    this.#connection?.pause()
  }

  resume(): void {
    this.#connection?.resume()
  }

  async close(): Promise<void> {
    this.#send()
    this.#closed = true
    await this.#connection?.close()
  }
}
