import { waitFor } from '@outboxkit/conformance'
import { Cancel, isOutboxError, type Logger, type OutboxBackend } from '@outboxkit/core'
import { afterAll, afterEach, describe, expect, test } from 'vitest'
import { Harness, nextEvent } from './support/harness.js'

const h = new Harness()
afterEach(() => h.cleanup())
afterAll(() => h.close())

interface Entry {
  level: keyof Logger
  fields: Record<string, unknown>
  message: string
}

/** A logger that records every call, pino-style (fields, message). */
function recorder(): Logger & { entries: Entry[]; at(level: keyof Logger): Entry[] } {
  const entries: Entry[] = []
  const method =
    (level: keyof Logger) =>
    (fields: Record<string, unknown>, message: string): void => {
      entries.push({ level, fields, message })
    }
  return {
    entries,
    at: (level) => entries.filter((e) => e.level === level),
    debug: method('debug'),
    info: method('info'),
    warn: method('warn'),
    error: method('error'),
  }
}

// Type-level: console fits, and so does pino, whose log methods have this LogFn type (pino.d.ts).
interface PinoLogFn {
  <T extends object>(obj: T, msg?: string, ...args: any[]): void
  (obj: unknown, msg?: string, ...args: any[]): void
  (msg: string, ...args: any[]): void
}
type PinoLike = { level: string; fatal: PinoLogFn; trace: PinoLogFn } & Record<
  'debug' | 'info' | 'warn' | 'error',
  PinoLogFn
>
export const consoleFits: Logger = console
export const pinoFits = (pino: PinoLike): Logger => pino

describe('relay logger', () => {
  test('success path: only start and stop are logged (info), no debug, warn or error', async () => {
    const outbox = await h.outbox('log_ok')
    const log = recorder()
    const relay = h.relay(outbox, { handlers: { t: () => {} }, logger: log, pollIntervalMs: 100 })
    await relay.start()
    const delivered = nextEvent(relay, 'delivered')
    await h.publish(outbox, [{ topic: 't', payload: { n: 1 } }])
    await delivered
    await relay.stop()
    expect(log.entries.map((e) => `${e.level}: ${e.message}`)).toEqual([
      `info: [outboxkit] relay started on ${outbox.table.display}`,
      'info: [outboxkit] relay stopping: draining running handlers',
      'info: [outboxkit] relay stopped',
    ])
    expect(log.entries[0]!.fields).toMatchObject({
      table: outbox.table.display,
      topics: ['t'],
      concurrency: 1_000, // the default
    })
  })

  test('a retry is a warn with the error and delay; a dead letter is an error with the reason', async () => {
    const outbox = await h.outbox('log_fail')
    const log = recorder()
    const boom = new Error('downstream 503')
    let calls = 0
    const relay = h.relay(outbox, {
      handlers: {
        t: () => {
          calls++
          if (calls === 1) throw boom
          throw new Cancel('not for us')
        },
      },
      logger: log,
      pollIntervalMs: 100,
      retry: { baseMs: 10, maxMs: 10, jitter: 0 },
    })
    await relay.start()
    const dead = nextEvent(relay, 'deadLettered')
    const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
    await dead
    await waitFor(() => log.at('error').length > 0, { what: 'the dead-letter log' })
    const [retry] = log.at('warn')
    expect(retry!.message).toBe('[outboxkit] handler failed on attempt 1; retrying in 10 ms')
    expect(retry!.fields).toMatchObject({ id: p!.id, topic: 't', attempts: 1, delayMs: 10, err: boom })
    const [deadLog] = log.at('error')
    expect(deadLog!.message).toBe('[outboxkit] message dead-lettered (cancel) after 2 attempt(s): not for us')
    expect(deadLog!.fields).toMatchObject({ id: p!.id, topic: 't', attempts: 2, reason: 'cancel' })
    expect(log.at('debug')).toEqual([])
  })

  test('claim errors are warned with their backoff, then the recovery is an info', async () => {
    const outbox = await h.outbox('log_claim')
    const log = recorder()
    const inner = h.backend()
    let failures = 2
    const backend: OutboxBackend = {
      ...inner,
      claim(request) {
        if (failures-- > 0) return Promise.reject(new Error('connection reset by peer'))
        return inner.claim(request)
      },
    }
    const relay = h.relay(outbox, { backend, handlers: { t: () => {} }, logger: log, notify: false })
    const claimed = nextEvent(relay, 'claimed')
    await relay.start()
    await claimed
    const warns = log.at('warn')
    expect(warns.map((w) => w.fields.failures)).toEqual([1, 2])
    for (const w of warns) {
      expect(w.message).toMatch(/^\[outboxkit\] claim failed; backing off \d+ ms$/)
      expect(w.fields.retryInMs).toBeGreaterThan(0)
      expect((w.fields.err as Error).message).toBe('connection reset by peer')
    }
    expect(log.at('info').map((e) => e.message)).toContain('[outboxkit] claims work again after 2 failure(s)')
  })

  test('a lost LISTEN connection is a warn, its re-establishment an info', async () => {
    const outbox = await h.outbox('log_listen')
    const log = recorder()
    const relay = h.relay(outbox, { handlers: { t: () => {} }, logger: log, pollIntervalMs: 60_000 })
    const firstClaim = nextEvent(relay, 'claimed')
    await relay.start()
    await firstClaim
    const [listener] = await h.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE query = $1`, [
      `LISTEN "${outbox.channel}"`,
    ])
    expect(listener).toBeDefined()
    const listenError = nextEvent(relay, 'error', { where: (e) => e.during === 'listen' })
    await h.query('SELECT pg_terminate_backend($1)', [listener!.pid])
    await listenError
    await waitFor(() => log.at('info').some((e) => e.message.includes('re-established')), {
      what: 'the reconnect log',
    })
    expect(log.at('warn').map((e) => e.message)).toEqual([
      '[outboxkit] LISTEN connection lost; reconnecting (wake-ups fall back to polling meanwhile)',
    ])
    expect(log.at('info').map((e) => e.message)).toContain('[outboxkit] LISTEN connection re-established')
  })

  test('a logger that throws never breaks delivery', async () => {
    const outbox = await h.outbox('log_throws')
    const thrower = () => {
      throw new Error('logger is broken')
    }
    const relay = h.relay(outbox, {
      handlers: { t: () => {} },
      logger: { debug: thrower, info: thrower, warn: thrower, error: thrower },
      pollIntervalMs: 100,
    })
    await relay.start()
    const delivered = nextEvent(relay, 'delivered')
    await h.publish(outbox, [{ topic: 't', payload: {} }])
    expect((await delivered).settled).toBe(true)
  })

  test('a logger without the four methods is refused with INVALID_CONFIG', async () => {
    const outbox = await h.outbox('log_bad', { migrate: false })
    for (const logger of [{ info() {} }, 'console', 42]) {
      let error: unknown
      try {
        h.relay(outbox, { handlers: { t: () => {} }, logger: logger as never })
      } catch (err) {
        error = err
      }
      expect(isOutboxError(error, 'INVALID_CONFIG')).toBe(true)
      expect((error as Error).message).toMatch(/logger must have debug, info, warn and error/)
    }
  })
})
