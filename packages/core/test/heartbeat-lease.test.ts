import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
// The lease heartbeat, run on every database of the matrix (DIALECTS).
import { DIALECTS, waitFor } from '@outboxkit/conformance'
import {
  createRelay,
  isOutboxError,
  type Outbox,
  type OutboxBackend,
  type RelayOptions,
} from '@outboxkit/core'
import type { ExtendLeaseRequest } from '@outboxkit/core/adapter'
import { describe, expect, test } from 'vitest'
import { deferred, nextEvent, observeFor, useHarness } from './support/harness.js'

/** A backend that records its lease extensions; `extend` may replace the real one. */
function recordExtensions(
  inner: OutboxBackend,
  extend?: (req: ExtendLeaseRequest) => Promise<string[]>,
): { backend: OutboxBackend; extensions: ExtendLeaseRequest[] } {
  const extensions: ExtendLeaseRequest[] = []
  return {
    extensions,
    backend: {
      ...inner,
      extendLease(req) {
        extensions.push(req)
        return extend ? extend(req) : inner.extendLease!(req)
      },
    },
  }
}

describe.each(DIALECTS)('%s', (dialect) => {
  const h = useHarness(dialect)

  /**
   * Relay A, polling once a minute without LISTEN: its handler of `t` hands its signal to `started`
   * and runs until that signal aborts it.
   */
  const hangingRelay = (outbox: Outbox<any>, options: Partial<RelayOptions<Outbox<any>>>) => {
    const started = deferred<AbortSignal>()
    const relay = h.relay(outbox, {
      handlers: {
        t: async (_m, { signal }) => {
          started.resolve(signal)
          await new Promise((r) => signal.addEventListener('abort', r))
        },
      },
      pollIntervalMs: 60_000,
      notify: false,
      ...options,
    })
    return { relay, started }
  }

  /** `available_at - now()` of a row, in ms (database clock). */
  const leaseLeftMs = async (outbox: Outbox<any>, id: string) => (await h.row(outbox, id))?.due_in_ms

  describe('lease heartbeat', () => {
    test('handlers running for many leases are neither aborted nor redelivered; one extension statement covers them all', async () => {
      const outbox = await h.outbox('hb_long')
      const release = deferred()
      const signals: AbortSignal[] = []
      const a = recordExtensions(h.backend())
      const relayA = h.relay(outbox, {
        backend: a.backend,
        handlers: {
          t: async (_m, { signal }) => {
            signals.push(signal)
            await release.promise
          },
        },
        leaseMs: 500, // heartbeat every 167 ms by default
        maxHandlerMs: 60_000,
        pollIntervalMs: 60_000,
        notify: false,
      })
      const otherCalls: number[] = []
      const relayB = h.relay(outbox, {
        handlers: { t: (m) => void otherCalls.push(m.attempts) },
        pollIntervalMs: 25,
        notify: false,
      })
      const published = await h.publish(outbox, [
        { topic: 't', payload: 1 },
        { topic: 't', payload: 2 },
        { topic: 't', payload: 3 },
      ])
      await relayA.start()
      await waitFor(() => signals.length === 3, { what: 'three handlers running on relay A' })
      await relayB.start()

      await observeFor(2_000) // four leases while relay B polls every 25 ms
      expect(otherCalls).toEqual([])
      expect(signals.some((s) => s.aborted)).toBe(false)
      for (const p of published) {
        expect(await leaseLeftMs(outbox, p.id)).toBeGreaterThan(0)
      }
      // Batched: each beat extends every running message in one statement, fenced by attempts.
      expect(a.extensions.length).toBeGreaterThanOrEqual(6)
      for (const extension of a.extensions) {
        expect(extension.leaseMs).toBe(500)
        expect(extension.rows.map((r) => r.id).sort()).toEqual(published.map((p) => p.id).sort())
        expect(extension.rows.every((r) => r.attempts === 1)).toBe(true)
      }

      const delivered = nextEvent(relayA, 'delivered', { where: (e) => e.message.id === published[2]!.id })
      release.resolve()
      const event = await delivered
      expect(event).toMatchObject({ settled: true, message: { attempts: 1 } })
      expect(event.durationMs).toBeGreaterThan(2_000)
      await waitFor(async () => (await h.rows(outbox)).length === 0, { what: 'all three rows deleted' })
      expect(otherCalls).toEqual([])
    })

    test('heartbeatMs: false: a handler outliving its lease is aborted and delivered again (the old behaviour)', async () => {
      const outbox = await h.outbox('hb_off')
      const { relay: relayA, started } = hangingRelay(outbox, { leaseMs: 300, heartbeatMs: false })
      const relayB = h.relay(outbox, { handlers: { t: () => {} }, pollIntervalMs: 25, notify: false })
      const redelivered = nextEvent(relayB, 'delivered')
      await h.publish(outbox, [{ topic: 't', payload: {} }])
      await relayA.start()
      const signal = await started.promise
      await relayB.start()
      expect((await redelivered).message.attempts).toBe(2)
      expect(signal.aborted).toBe(true)
    })

    test('extensions that fail let the lease lapse: the handler is aborted then, and another relay takes over', async () => {
      const outbox = await h.outbox('hb_fail')
      const a = recordExtensions(h.backend(), async () => {
        throw new Error('database unreachable')
      })
      const { relay: relayA, started } = hangingRelay(outbox, { backend: a.backend, leaseMs: 400 })
      const leaseErrors = nextEvent(relayA, 'error', { where: (e) => e.during === 'lease' })
      const relayB = h.relay(outbox, { handlers: { t: () => {} }, pollIntervalMs: 25, notify: false })
      const redelivered = nextEvent(relayB, 'delivered')
      await h.publish(outbox, [{ topic: 't', payload: {} }])
      // Before the claim: the lapse comes at least leaseMs after it, however late the handler starts.
      const startedAt = Date.now()
      await relayA.start()
      const signal = await started.promise
      await relayB.start()
      expect(String((await leaseErrors).error)).toMatch(/database unreachable/)
      expect((await redelivered).message.attempts).toBe(2)
      expect(signal.aborted).toBe(true)
      expect(String(signal.reason)).toMatch(/lease expired/)
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(300)
    })

    test('the extension is fenced by attempts: a message taken over meanwhile is not extended and its handler is aborted', async () => {
      const outbox = await h.outbox('hb_fence')
      const { relay: relayA, started } = hangingRelay(outbox, { leaseMs: 3_000, heartbeatMs: 50 })
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      await relayA.start()
      const signal = await started.promise
      // Another relay's claim, as it would look after a lapse: attempts moves on.
      await h.update(outbox, p!.id, { attempts: 'increment' })
      await waitFor(() => signal.aborted, { what: 'relay A to abort its handler', timeoutMs: 2_000 })
      expect(String(signal.reason)).toMatch(/could not be extended/)
      expect(relayA.stats.inFlight).toBe(0)
    })

    test('a relay that dies stops extending: once the lease lapses another relay delivers the message', async () => {
      const outbox = await h.outbox('hb_dies')
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      const dir = mkdtempSync(join(tmpdir(), 'outboxkit-heartbeat-'))
      const src = (pkg: string) => fileURLToPath(new URL(`../../${pkg}/src/index.ts`, import.meta.url))
      const script = join(dir, 'relay.mts')
      const child = h.childBackendSource(src)
      writeFileSync(
        script,
        `import { createRelay, defineOutbox } from ${JSON.stringify(src('core'))}
${child.imports}
const outbox = defineOutbox({ table: ${JSON.stringify(outbox.table.display)} })
const relay = createRelay(outbox, {
  backend: ${child.expression},
  handlers: { t: () => { console.log('started'); return new Promise(() => {}) } },
  leaseMs: 1_200,
  maxHandlerMs: 60_000,
  pollIntervalMs: 50,
  notify: false,
})
await relay.start()
`,
      )
      let proc: ChildProcess | undefined
      try {
        proc = spawn(process.execPath, ['--import', 'tsx', script], {
          cwd: fileURLToPath(new URL('../../..', import.meta.url)),
          stdio: ['ignore', 'pipe', 'inherit'],
        })
        const running = proc
        await new Promise<void>((resolve, reject) => {
          running.stdout!.on('data', (d: Buffer) => {
            if (d.toString().includes('started')) resolve()
          })
          running.once('exit', (code) =>
            reject(new Error(`the relay process exited (${code}) before its handler started`)),
          )
        })
        // The child's heartbeat keeps the lease ahead of the clock past its first lease. A relay
        // process must stay alive on its own while it runs: an early exit fails here at once.
        const claimedUntil = Date.now() + (await leaseLeftMs(outbox, p!.id))!
        await waitFor(
          async () => {
            if (running.exitCode !== null || running.signalCode !== null) {
              throw new Error(
                `the relay process exited (code ${running.exitCode}, signal ${running.signalCode}) while its relay was running and its handler pending`,
              )
            }
            return Date.now() + (await leaseLeftMs(outbox, p!.id))! > claimedUntil + 300
          },
          { what: 'the relay process to extend its lease', timeoutMs: 5_000 },
        )
        const relayB = h.relay(outbox, { handlers: { t: () => {} }, pollIntervalMs: 25, notify: false })
        const delivered = nextEvent(relayB, 'delivered', { timeoutMs: 10_000 })
        await relayB.start()
        await observeFor(1_300) // more than a lease: the living relay keeps it
        expect(relayB.stats.claimed).toBe(0)

        // The attempts the living relay's claims counted (on a loaded machine its own lease can
        // lapse and it claims the message again itself): the next relay's delivery is the next one.
        const attemptsAtKill = (await h.row(outbox, p!.id))!.attempts
        proc.kill('SIGKILL')
        const killedAt = Date.now()
        const event = await delivered
        expect(event.message).toMatchObject({ id: p!.id, attempts: Number(attemptsAtKill) + 1 })
        expect(Date.now() - killedAt).toBeLessThan(1_200 + 5_000)
      } finally {
        proc?.kill('SIGKILL')
        rmSync(dir, { recursive: true, force: true })
      }
    })

    test('a handler that runs past maxHandlerMs loses its lease: aborted when it lapses, delivered again, dead after maxAttempts', async () => {
      const outbox = await h.outbox('hb_cap')
      const calls: number[] = []
      const reasons: string[] = []
      const startedAt: number[] = []
      const relay = h.relay(outbox, {
        handlers: {
          t: (m, { signal }) => {
            calls.push(m.attempts)
            startedAt.push(Date.now())
            signal.addEventListener('abort', () => reasons.push(String((signal.reason as Error).message)))
            return new Promise(() => {}) // hangs, ignores its signal
          },
        },
        leaseMs: 1_000,
        maxHandlerMs: 2_500,
        maxAttempts: 2,
        pollIntervalMs: 25,
        notify: false,
      })
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      const dead = nextEvent(relay, 'deadLettered', { timeoutMs: 30_000 })
      await relay.start()
      expect(await dead).toMatchObject({ id: p!.id, reason: 'max-attempts', attempts: 2, settled: true })
      expect(calls).toEqual([1, 2])
      expect(reasons).toHaveLength(2)
      expect(
        reasons.every((r) => /lease expired: the handler ran past maxHandlerMs \(2500 ms\)/.test(r)),
      ).toBe(true)
      // The heartbeat kept the first run past its 1000 ms lease, up to the 2500 ms bound.
      expect(startedAt[1]! - startedAt[0]!).toBeGreaterThanOrEqual(2_500)
      expect(relay.stats.inFlight).toBe(0)
    })

    test('heartbeatMs and maxHandlerMs are validated with INVALID_CONFIG', async () => {
      const outbox = await h.outbox('hb_config', { migrate: false })
      for (const heartbeatMs of [600, 0, Number.NaN, -1]) {
        let err: unknown
        try {
          createRelay(outbox, {
            backend: h.backend(),
            handlers: { t: () => {} },
            leaseMs: 1_000,
            heartbeatMs,
          })
        } catch (e) {
          err = e
        }
        expect(isOutboxError(err, 'INVALID_CONFIG'), String(heartbeatMs)).toBe(true)
      }
      expect(() =>
        createRelay(outbox, {
          backend: h.backend(),
          handlers: { t: () => {} },
          leaseMs: 1_000,
          heartbeatMs: 500,
        }),
      ).not.toThrow()
      for (const maxHandlerMs of [0, -5, Number.NaN, '1000']) {
        let err: unknown
        try {
          createRelay(outbox, {
            backend: h.backend(),
            handlers: { t: () => {} },
            maxHandlerMs: maxHandlerMs as never,
          })
        } catch (e) {
          err = e
        }
        expect(isOutboxError(err, 'INVALID_CONFIG'), String(maxHandlerMs)).toBe(true)
      }
      expect(() =>
        createRelay(outbox, { backend: h.backend(), handlers: { t: () => {} }, maxHandlerMs: Infinity }),
      ).not.toThrow()
    })
  })
})
