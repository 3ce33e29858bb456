import type { Outbox } from '../outbox/define-outbox.js'
import type { OutboxBackend } from '../protocol/backend.js'
import type { Logger } from '../telemetry/logger.js'
import type { DeadLetterReason, DeliveredMessage, Handlers } from './handler-types.js'
import type { RelayTelemetryOptions } from './relay-telemetry.js'
import type { RetryPolicy } from './retry.js'

/** Options of {@link createRelay}. */
export interface RelayOptions<O extends Outbox<any>> {
  /** Where messages live: `pgBackend(...)`, `pgliteBackend(db)`, ... */
  backend: OutboxBackend
  /** One handler per topic; the relay claims only these topics. */
  handlers: Handlers<O>
  /**
   * Concurrency slots: the most messages this relay holds at once, from claim until their outcome
   * is written (or, with `maxPendingOutcomes`, until their handler returns). The relay never
   * claims more rows than it has free slots, so this also bounds the handlers running at once, the
   * relay's memory and the messages delivered again if the process dies. Default 1 000 (twice
   * `batchSize`: while a backlog lasts, a second claim runs while the first is in flight or its
   * batch is settled): lower it for handlers that call a rate-limited service, and remember it
   * multiplies by the number of relays (docs/performance.md#defaults).
   *
   * @defaultValue `1_000`
   */
  concurrency?: number
  /**
   * Most rows per claim statement. While slots are busy the relay waits (at most 20 ms) until
   * half a batch of them is free instead of claiming a few rows at a time. While the last claim
   * came back full (a backlog), the next one goes out without waiting for those in flight, as many
   * as the free slots allow (`concurrency / batchSize`); otherwise, and for a relay that handles
   * an ordered topic, one at a time.
   *
   * @defaultValue `500`
   */
  batchSize?: number
  /**
   * Outcomes that may wait for their batched settle statement while their slot already runs the
   * next handler. Default 0: a slot is freed when its outcome is written, so at most
   * `concurrency` rows of this relay are `processing`. With N > 0 a slot is freed when its handler
   * returns, the next claim overlaps the settle, and up to `concurrency + N` rows may be
   * `processing` (and delivered again after a crash); `concurrency` still bounds the handlers
   * running at once. A slow settle applies backpressure: no claim while N outcomes wait.
   *
   * @defaultValue `0`
   */
  maxPendingOutcomes?: number
  /**
   * Poll interval when idle, in ms. Polling is the source of truth.
   *
   * @defaultValue `1_500`
   */
  pollIntervalMs?: number
  /**
   * How long a claimed row stays invisible to other claims, in ms. Default 30 000. While a
   * handler runs, the heartbeat (`heartbeatMs`) keeps extending it, so a handler may run longer
   * than `leaseMs`; a relay that dies stops extending and its messages are reclaimed once their
   * lease lapses, at most `leaseMs` later.
   *
   * @defaultValue `30_000`
   */
  leaseMs?: number
  /**
   * Lease heartbeat: every `heartbeatMs` the relay extends, in one statement, the lease of the
   * messages whose handlers still run (fenced by attempts), so a long handler is neither aborted
   * nor delivered twice while its relay lives. Default `leaseMs / 3`; at most `leaseMs / 2`.
   * `false` turns it off: a handler still running after `leaseMs` is then aborted and its
   * message delivered again.
   *
   * @defaultValue `leaseMs / 3`
   */
  heartbeatMs?: number | false
  /**
   * How long a handler may run while the heartbeat keeps its lease, in ms. Past it the relay stops
   * extending that message's lease: when the lease lapses the handler's `signal` is aborted and
   * the message is delivered again (an attempt, dead-lettered at claim after `maxAttempts`), so a
   * handler that hangs cannot hold its message (or its ordered key) forever. Default
   * `5 × leaseMs` (2.5 minutes with the default lease); raise it for longer handlers, `Infinity`
   * for no bound.
   *
   * @defaultValue `5 * leaseMs`
   */
  maxHandlerMs?: number
  /**
   * Deliveries before a message is dead-lettered.
   *
   * @defaultValue `10`
   */
  maxAttempts?: number
  /**
   * Backoff after a handler failure.
   *
   * @defaultValue `{ baseMs: 1_000, maxMs: 300_000, jitter: 1 }`
   */
  retry?: RetryPolicy
  /**
   * LISTEN for publish wake-ups on top of polling (when the backend supports it).
   *
   * @defaultValue `true`
   */
  notify?: boolean
  /**
   * Keep delivered rows (`state = 'delivered'`) instead of deleting them.
   *
   * @defaultValue `false`
   */
  keepDelivered?: boolean
  /**
   * Default grace for {@link Relay.stop}, in ms.
   *
   * @defaultValue `10_000`
   */
  graceMs?: number
  /**
   * `transport: 'wal'`: the relay warns (a log line) when its replication slot retains more WAL
   * than this, in bytes. Default 1 GiB. See docs/wal.md, "Slot safety".
   *
   * @defaultValue `1_073_741_824` (1 GiB)
   */
  slotWarnBytes?: number
  /**
   * Where the relay logs: any object with `debug`/`info`/`warn`/`error` (pino, console, ...).
   * Start/stop, claim and settle errors with their backoff, LISTEN reconnects, retries and dead
   * letters; nothing on the success path. Default: silent.
   *
   * @defaultValue none: silent
   */
  logger?: Logger
  /**
   * OpenTelemetry spans and metrics through `@opentelemetry/api` when it is installed (see
   * docs/operations.md). `false` turns them off for this relay.
   *
   * @defaultValue `true`
   */
  telemetry?: boolean | RelayTelemetryOptions
}

/** Events a relay emits. Subscribe with {@link Relay.on}. */
export interface RelayEvents {
  /** A handler succeeded and the row was deleted (or marked delivered). */
  delivered: { message: DeliveredMessage; durationMs: number; settled: boolean }
  /** A handler failed; the row is rescheduled. */
  retried: { message: DeliveredMessage; error: unknown; delayMs: number; settled: boolean }
  /** A row was dead-lettered. `message` is absent when it was dead-lettered at claim. */
  deadLettered: {
    id: string
    topic: string
    attempts: number
    reason: DeadLetterReason
    error: string
    message?: DeliveredMessage
    settled: boolean
  }
  /** Something failed that the relay survives (it backs off and carries on). */
  error: { error: unknown; during: 'claim' | 'settle' | 'listen' | 'listener' | 'lease' }
  /** A claim statement returned. */
  claimed: { count: number; limit: number }
  /**
   * LISTEN cannot work on this backend's connection (behind a transaction-mode pooler, say):
   * emitted once; the relay keeps delivering by polling every `pollIntervalMs`.
   */
  listenUnavailable: { reason: string }
}

/** Counters of a relay since it was created. */
export interface RelayStats {
  claimed: number
  delivered: number
  retried: number
  deadLettered: number
  errors: number
  /** Rows claimed and not yet settled or abandoned. */
  inFlight: number
}

/** Options of {@link Relay.stop}. */
export interface StopOptions {
  /**
   * How long to wait for running handlers before aborting them, in ms.
   *
   * @defaultValue the relay's `graceMs` (`10_000`)
   */
  graceMs?: number
}

/** A running (or stopped) relay. */
export interface Relay {
  /** Starts claiming and delivering. Resolves once running; does not wait for `stop()`. */
  start(): Promise<void>
  /**
   * Stops claiming, waits up to `graceMs` for running handlers, aborts the signal of those still
   * running, writes the results it has, releases the backend's own connections. Aborted
   * messages are not settled: their leases lapse and they are delivered again.
   */
  stop(options?: StopOptions): Promise<void>
  /** Subscribes to an event; returns an unsubscribe function. */
  on<K extends keyof RelayEvents>(event: K, listener: (event: RelayEvents[K]) => void): () => void
  /** Asks for a claim now (as a NOTIFY would). */
  wake(): void
  /** Whether the relay is running. */
  readonly running: boolean
  /** Counters. */
  readonly stats: Readonly<RelayStats>
}
