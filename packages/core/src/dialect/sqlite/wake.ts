/**
 * The in-process wake-up for SQLite, which has no LISTEN/NOTIFY: a relay's `listen` subscribes
 * to its outbox channel here, and the SQLite publisher signals the channel once the publishing
 * transaction has ended. Only relays in the same process are woken; every other relay polls.
 *
 * Wakes cut latency, never carry correctness: a signal for a transaction that rolled back is a
 * spurious wake (one claim that finds nothing), and a missed one costs one poll interval.
 */

const listeners = new Map<string, Set<() => void>>()

interface Watch {
  /** Transactions still open that published on the channel: keyed by their connection or handle. */
  readonly open: Map<object, () => boolean>
  timer: ReturnType<typeof setTimeout> | ReturnType<typeof setImmediate> | undefined
  /** Consecutive checks that found a transaction still open: sets the backoff. */
  misses: number
}
const watches = new Map<string, Watch>()

/** The longest pause between two checks of a transaction that is still open, in ms. */
const MAX_CHECK_INTERVAL_MS = 25

/**
 * Subscribes `onWake` to the wakes of `channel` in this process. Returns the unsubscribe
 * function. Used by the SQLite backend's `listen`.
 */
export function listenSqliteWake(channel: string, onWake: () => void): () => void {
  let set = listeners.get(channel)
  if (!set) {
    set = new Set()
    listeners.set(channel, set)
  }
  // A fresh function per subscription, so the same callback can subscribe twice and unsubscribe once.
  const entry = () => onWake()
  set.add(entry)
  return () => {
    const s = listeners.get(channel)
    if (!s) return
    s.delete(entry)
    if (s.size === 0) listeners.delete(channel)
  }
}

/** True when a relay of this process listens on `channel` (publishers skip the signal otherwise). */
export function hasSqliteWakeListeners(channel: string): boolean {
  return (listeners.get(channel)?.size ?? 0) > 0
}

function fire(channel: string) {
  const set = listeners.get(channel)
  if (!set) return
  for (const onWake of [...set]) {
    try {
      onWake()
    } catch {
      // A listener's failure is the listener's: the relay reports its own errors.
    }
  }
}

function check(channel: string) {
  const watch = watches.get(channel)
  if (!watch) return
  watch.timer = undefined
  let ended = false
  for (const [handle, inTransaction] of watch.open) {
    let open: boolean
    try {
      open = inTransaction()
    } catch {
      open = false // e.g. the connection was closed: its transaction is over either way
    }
    if (!open) {
      watch.open.delete(handle)
      ended = true
    }
  }
  if (ended) {
    watch.misses = 0
    fire(channel)
  } else {
    watch.misses++
  }
  if (watch.open.size === 0 || !hasSqliteWakeListeners(channel)) {
    watches.delete(channel)
    return
  }
  schedule(channel, watch)
}

function schedule(channel: string, watch: Watch) {
  if (watch.timer !== undefined) return
  if (watch.misses === 0) {
    // The common case: a synchronous transaction (better-sqlite3's db.transaction) has already
    // committed by the next turn of the event loop. Not unref'd: an unref'd immediate does not keep
    // the event loop from blocking in its I/O poll, so it could run only at the next unrelated event.
    watch.timer = setImmediate(() => check(channel))
    return
  }
  const timer = setTimeout(
    () => check(channel),
    Math.min(MAX_CHECK_INTERVAL_MS, 2 ** Math.min(watch.misses - 1, 5)),
  )
  timer.unref?.()
  watch.timer = timer
}

/**
 * Wakes the relays listening on `channel` in this process once the transaction that just
 * published has ended. `inTransaction` tells whether it is still open (better-sqlite3:
 * `() => db.inTransaction`); it is checked on the next turn of the event loop, then with a short
 * backoff (at most every 25 ms) while the transaction stays open. Several publishes in one
 * transaction (the same `handle`) give one wake. Without `inTransaction` the wake is sent on the
 * next turn of the event loop. Costs nothing when no relay of this process listens.
 *
 * @param channel - the outbox's channel (`outbox.channel`)
 * @param handle - the transaction's connection or handle, to coalesce its publishes
 * @param inTransaction - whether that transaction is still open
 */
export function wakeSqliteAfterTransaction(
  channel: string,
  handle: object,
  inTransaction?: () => boolean,
): void {
  if (!hasSqliteWakeListeners(channel)) return
  let watch = watches.get(channel)
  if (!watch) {
    watch = { open: new Map(), timer: undefined, misses: 0 }
    watches.set(channel, watch)
  }
  if (!watch.open.has(handle)) watch.open.set(handle, inTransaction ?? (() => false))
  schedule(channel, watch)
}
