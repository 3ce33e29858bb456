import { waitFor } from '@outboxkit/conformance'
import {
  Cancel,
  createRelay,
  type Handler,
  type Outbox,
  type OutboxBackend,
  type Relay,
  type RelayEvents,
  Retry,
} from '@outboxkit/core'
import { publishMany } from '@outboxkit/pg'
import type fc from 'fast-check'
import type pg from 'pg'
import { expect } from 'vitest'
import { tableSql } from './world.js'

/** What a handler does with a message: deliver, throw, Retry later, Retry now, or Cancel. */
export type Outcome = 'ok' | 'fail' | 'retry' | 'retryNow' | 'cancel'

/** Relay settings of the model run: no poll, no NOTIFY, an hour of lease and backoff. */
export const MAX_ATTEMPTS = 3
const HOUR = 3_600_000

/** One message as the model sees it. */
export interface ModelMessage {
  /** Sequence number in the run; picks the handler outcome (`outcomes[n % outcomes.length]`). */
  n: number
  state: 'pending' | 'processing' | 'delivered' | 'dead'
  attempts: number
  /** `available_at <= now()`: a claim would take it (for live states). */
  due: boolean
}

/** The model: every committed message by id. */
export interface Model {
  messages: Map<string, ModelMessage>
  nextN: number
}

/** The system under test: a table on the real server, and at most one relay at a time. */
export interface Real {
  pool: pg.Pool
  outbox: Outbox
  backend: OutboxBackend
  relay: Relay | undefined
  /** What the handler does now: outcomes by message number, or hang until aborted. */
  mode: { kind: 'deliver'; outcomes: Outcome[] } | { kind: 'hang' }
  /** Handler calls of the current step: `id#attempts`. */
  calls: string[]
  /** Settle events (with a message) of the current step. */
  settled: { kind: string; settled: boolean }[]
  /** Claims running right now (the backend is wrapped to count them). */
  claimsInFlight: number
}

/** Builds the {@link Real} for one run (the table must be empty). */
export function makeReal(pool: pg.Pool, outbox: Outbox, inner: OutboxBackend): Real {
  const real: Real = {
    pool,
    outbox,
    backend: inner,
    relay: undefined,
    mode: { kind: 'deliver', outcomes: ['ok'] },
    calls: [],
    settled: [],
    claimsInFlight: 0,
  }
  real.backend = {
    ...inner,
    async claim(request) {
      real.claimsInFlight++
      try {
        return await inner.claim(request)
      } finally {
        real.claimsInFlight--
      }
    },
    close: async () => {}, // shared by every relay of the run
  }
  return real
}

const handler =
  (real: Real): Handler =>
  async (message, { signal }) => {
    real.calls.push(`${message.id}#${message.attempts}`)
    const mode = real.mode
    if (mode.kind === 'hang') {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()))
      return
    }
    const n = (message.payload as { n: number }).n
    switch (mode.outcomes[n % mode.outcomes.length]!) {
      case 'ok':
        return
      case 'fail':
        throw new Error('handler failed')
      case 'retry':
        throw new Retry({ delayMs: HOUR })
      case 'retryNow':
        throw new Retry({ delayMs: 0 })
      case 'cancel':
        throw new Cancel('cancelled')
    }
  }

function startRelay(real: Real): Relay {
  const relay = createRelay(real.outbox, {
    backend: real.backend,
    handlers: { t: handler(real) },
    concurrency: 500,
    batchSize: 500,
    leaseMs: HOUR,
    pollIntervalMs: HOUR,
    maxAttempts: MAX_ATTEMPTS,
    retry: { baseMs: HOUR, maxMs: HOUR, jitter: 0 },
    notify: false,
    keepDelivered: true,
  })
  for (const kind of ['delivered', 'retried', 'deadLettered'] as const) {
    relay.on(kind, (e: RelayEvents[typeof kind]) => {
      if (e.message) real.settled.push({ kind, settled: e.settled })
    })
  }
  return relay
}

/** Asserts that the table holds exactly the model (state, attempts, due-ness of live rows). */
export async function assertMatches(model: Model, real: Real): Promise<void> {
  const { rows } = await real.pool.query(
    `SELECT id::text AS id, state, attempts, available_at <= now() AS due FROM ${tableSql(real.outbox)}`,
  )
  const actual = Object.fromEntries(
    rows.map((r) => [r.id, `${r.state}/${r.attempts}${live(r.state) ? (r.due ? '/due' : '/later') : ''}`]),
  )
  const expected = Object.fromEntries(
    [...model.messages].map(([id, m]) => [
      id,
      `${m.state}/${m.attempts}${live(m.state) ? (m.due ? '/due' : '/later') : ''}`,
    ]),
  )
  expect(actual).toEqual(expected)
}

const live = (state: string) => state === 'pending' || state === 'processing'
const dueCount = (model: Model) => [...model.messages.values()].filter((m) => live(m.state) && m.due).length

/**
 * Claims what is due with the current relay (starting one if there is none) and waits until the
 * claim and every settle it causes are done. `due`: rows the model says the first claim takes;
 * `expectedCalls`: the handler calls (`id#attempts`) the model predicts.
 */
async function claimStep(real: Real, due: number, expectedCalls: string[]): Promise<void> {
  real.calls = []
  real.settled = []
  let relay = real.relay
  let firstClaim: Promise<RelayEvents['claimed']>
  const claimed = (r: Relay) =>
    new Promise<RelayEvents['claimed']>((resolve) => {
      const off = r.on('claimed', (e) => {
        off()
        resolve(e)
      })
    })
  if (!relay) {
    relay = real.relay = startRelay(real)
    firstClaim = claimed(relay)
    await relay.start() // start claims at once
  } else {
    firstClaim = claimed(relay)
    relay.wake()
  }
  const first = await withTimeout(firstClaim, 'the claim')
  expect(first.count, 'rows claimed').toBe(due)
  const settles = real.mode.kind === 'hang' ? 0 : expectedCalls.length
  await waitFor(() => real.calls.length >= expectedCalls.length && real.settled.length >= settles, {
    timeoutMs: 15_000,
    intervalMs: 2,
    what: `${expectedCalls.length} handler calls and ${settles} settles`,
  })
  await waitFor(() => real.claimsInFlight === 0, { timeoutMs: 15_000, intervalMs: 2, what: 'claims to end' })
  expect([...real.calls].sort(), 'handler calls (id#attempts)').toEqual([...expectedCalls].sort())
  expect(real.settled.every((s) => s.settled)).toBe(true)
}

async function withTimeout<T>(p: Promise<T>, what: string, ms = 15_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

type Cmd = fc.AsyncCommand<Model, Real>

/** Publishes `count` messages in a transaction that commits (or rolls back). */
export class PublishCommand implements Cmd {
  constructor(
    readonly count: number,
    readonly rollback: boolean,
  ) {}
  check = () => true
  async run(model: Model, real: Real) {
    const client = await real.pool.connect()
    try {
      await client.query('BEGIN')
      const ns = Array.from({ length: this.count }, (_, i) => model.nextN + i)
      const results = await publishMany(
        real.outbox,
        client,
        ns.map((n) => ({ topic: 't', payload: { n } })),
      )
      await client.query(this.rollback ? 'ROLLBACK' : 'COMMIT')
      if (!this.rollback) {
        results.forEach((r, i) => {
          model.messages.set(r.id, { n: ns[i]!, state: 'pending', attempts: 0, due: true })
        })
        model.nextN += this.count
      }
    } finally {
      client.release()
    }
    await assertMatches(model, real)
  }
  toString() {
    return `publish(${this.count})${this.rollback ? '+rollback' : ''}`
  }
}

/** The relay claims everything due and the handler answers with `outcomes` (by message number). */
export class DeliverCommand implements Cmd {
  constructor(readonly outcomes: Outcome[]) {}
  check = () => true
  async run(model: Model, real: Real) {
    real.mode = { kind: 'deliver', outcomes: this.outcomes }
    const due = dueCount(model)
    const calls: string[] = []
    for (const [id, m] of model.messages) {
      if (!live(m.state) || !m.due) continue
      if (m.attempts >= MAX_ATTEMPTS) {
        m.state = 'dead' // dead-lettered at claim: its last attempt never reported back
        continue
      }
      const outcome = this.outcomes[m.n % this.outcomes.length]!
      m.attempts++
      calls.push(`${id}#${m.attempts}`)
      if (outcome === 'ok') m.state = 'delivered'
      else if (outcome === 'cancel' || m.attempts >= MAX_ATTEMPTS) m.state = 'dead'
      else if (outcome === 'retryNow') {
        // Retry({ delayMs: 0 }) is due at once and the relay claims it again by itself,
        // until the final attempt dead-letters it.
        while (m.attempts < MAX_ATTEMPTS) {
          m.attempts++
          calls.push(`${id}#${m.attempts}`)
        }
        m.state = 'dead'
      } else {
        m.state = 'pending'
        m.due = false
      }
    }
    await claimStep(real, due, calls)
    await assertMatches(model, real)
  }
  toString() {
    return `deliver(${this.outcomes.join(',')})`
  }
}

/** The relay claims what is due, then dies mid-handler (`stop({ graceMs: 0 })` abandons). */
export class CrashCommand implements Cmd {
  check = () => true
  async run(model: Model, real: Real) {
    real.mode = { kind: 'hang' }
    const due = dueCount(model)
    const calls: string[] = []
    for (const [id, m] of model.messages) {
      if (!live(m.state) || !m.due) continue
      if (m.attempts >= MAX_ATTEMPTS) {
        m.state = 'dead'
        continue
      }
      m.attempts++
      m.state = 'processing'
      m.due = false
      calls.push(`${id}#${m.attempts}`)
    }
    await claimStep(real, due, calls)
    await real.relay!.stop({ graceMs: 0 })
    real.relay = undefined
    await assertMatches(model, real)
  }
  toString() {
    return 'crash()'
  }
}

/** Time passes: leases (`processing`) or backoffs (`pending`) run out, via SQL. */
export class TimeCommand implements Cmd {
  constructor(readonly what: 'lease' | 'backoff') {}
  check = () => true
  async run(model: Model, real: Real) {
    const state = this.what === 'lease' ? 'processing' : 'pending'
    await real.pool.query(
      `UPDATE ${tableSql(real.outbox)} SET available_at = now() - interval '1 ms' WHERE state = $1`,
      [state],
    )
    for (const m of model.messages.values()) if (m.state === state) m.due = true
    await assertMatches(model, real)
  }
  toString() {
    return this.what === 'lease' ? 'leasesLapse()' : 'backoffsPass()'
  }
}
