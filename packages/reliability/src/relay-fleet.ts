import { pollUntil } from './database.js'
import { captureInFlight, type LedgerTables, openConnections } from './ledger.js'
import type { LedgerDb } from './ledger-db.js'
import { type RelayProcess, spawnRelayProcess } from './relay-process.js'
import type { RelayWorkerConfig } from './relay-worker-config.js'

/** One relay process death, deliberate (a kill) or not (the process killed itself). */
export interface DeathRecord {
  pid: number
  /** `'killed'`: SIGKILL sent by the fleet; `'died'`: the process ended on its own. */
  cause: 'killed' | 'died'
  signal: string | null
  /** Side effects of this relay whose message was not settled when it died (see `captureInFlight`). */
  inFlight: number
}

/** Options of {@link RelayFleet}. */
export interface RelayFleetOptions {
  /** The database under test, for bookkeeping (never used by the relays). */
  db: LedgerDb
  tables: LedgerTables
  /** The config of the `n`th relay process started by the fleet. */
  config(n: number): RelayWorkerConfig
  /** Start a replacement whenever a relay dies on its own. Default false. */
  restartOnDeath?: boolean
  /** Bound on a relay's startup (tsx compiles the sources). Default 60 s. */
  startTimeoutMs?: number
}

/**
 * A set of relay processes with crash tooling: SIGKILL one, wait until its connections are gone
 * from the server (PostgreSQL `pg_stat_activity`, MySQL's process list; a SQLite statement ends
 * with its process), record which of its side effects were in flight, start a replacement.
 */
export class RelayFleet {
  readonly deaths: DeathRecord[] = []
  readonly #options: RelayFleetOptions
  readonly #live = new Set<RelayProcess>()
  readonly #all: RelayProcess[] = []
  readonly #killing = new Set<number>()
  #started = 0
  #stopping = false
  #pending = new Set<Promise<unknown>>()

  constructor(options: RelayFleetOptions) {
    this.#options = options
  }

  /** Relay processes alive (started or starting). */
  get live(): RelayProcess[] {
    return [...this.#live]
  }

  /** Relay processes whose relay has started and that are still alive. */
  get running(): RelayProcess[] {
    return this.live.filter((r) => r.running)
  }

  /** Every relay process the fleet started. */
  get all(): readonly RelayProcess[] {
    return this.#all
  }

  /** Starts one relay process and waits until it is running. */
  async spawn(): Promise<RelayProcess> {
    const config = this.#options.config(this.#started++)
    const relay = spawnRelayProcess(config)
    this.#all.push(relay)
    this.#live.add(relay)
    void relay.exited.then((exit) => {
      this.#live.delete(relay)
      if (this.#killing.has(relay.pid) || this.#stopping) return
      this.#track(
        this.#recordDeath(relay, 'died', exit.signal).then(() => {
          if (this.#options.restartOnDeath && !this.#stopping) return this.spawn()
        }),
      )
    })
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeoutMs = this.#options.startTimeoutMs ?? 60_000
    try {
      await Promise.race([
        relay.ready,
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`relay ${relay.pid} not ready in ${timeoutMs} ms: ${relay.stderr()}`)),
            timeoutMs,
          )
        }),
      ])
    } finally {
      clearTimeout(timer)
    }
    return relay
  }

  /** Starts `n` relay processes in parallel. */
  async spawnMany(n: number): Promise<RelayProcess[]> {
    return Promise.all(Array.from({ length: n }, () => this.spawn()))
  }

  /**
   * SIGKILLs `victim` (default: a random live relay), waits for its exit and for its server
   * connections to disappear, then records its in-flight side effects. Returns the record.
   */
  async kill(victim?: RelayProcess): Promise<DeathRecord | undefined> {
    const live = this.live.filter((r) => !this.#killing.has(r.pid))
    const relay = victim ?? live[Math.floor(Math.random() * live.length)]
    if (!relay?.alive) return undefined
    this.#killing.add(relay.pid)
    relay.kill('SIGKILL')
    const exit = await relay.exited
    return this.#recordDeath(relay, 'killed', exit.signal)
  }

  /** Waits for deaths being recorded and replacements being started. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending])
  }

  /** SIGTERMs every relay (graceful stop), SIGKILLs those still running after `timeoutMs`. */
  async stop(timeoutMs = 30_000): Promise<void> {
    this.#stopping = true
    await this.settled()
    const live = this.live
    for (const r of live) r.kill('SIGTERM')
    const timer = setTimeout(() => {
      for (const r of live) r.kill('SIGKILL')
    }, timeoutMs)
    await Promise.all(live.map((r) => r.exited))
    clearTimeout(timer)
  }

  #track(p: Promise<unknown>): void {
    const tracked = p.catch(() => {}).finally(() => this.#pending.delete(tracked))
    this.#pending.add(tracked)
  }

  async #recordDeath(relay: RelayProcess, cause: DeathRecord['cause'], signal: string | null) {
    const { db, tables } = this.#options
    // A statement the process sent before dying may still commit on the server: wait it out.
    await pollUntil(async () => (await openConnections(db, tables, relay)) === 0, {
      timeoutMs: 30_000,
      what: `the connections of relay ${relay.pid} to close`,
    })
    const record: DeathRecord = {
      pid: relay.pid,
      cause,
      signal,
      inFlight: await captureInFlight(db, tables, relay.pid),
    }
    this.deaths.push(record)
    return record
  }
}
