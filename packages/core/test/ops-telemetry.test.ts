import { writeFileSync } from 'node:fs'
import { context, metrics, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { TRANSPORT, waitFor } from '@outboxkit/conformance'
import {
  Cancel,
  INSTRUMENTATION_SCOPE,
  metricNames,
  type Outbox,
  type OutboxBackend,
  Retry,
} from '@outboxkit/core'
import { publish, publishMany } from '@outboxkit/pg'
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest'
import { Harness, nextEvent, observeFor, tableSql } from './support/harness.js'

// The OpenTelemetry SDK with in-memory exporters, registered globally as an application would.
const spanExporter = new InMemorySpanExporter()
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] })
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
const reader = new PeriodicExportingMetricReader({
  exporter: metricExporter,
  exportIntervalMillis: 3_600_000,
})
const meterProvider = new MeterProvider({ readers: [reader] })
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
trace.setGlobalTracerProvider(tracerProvider)
metrics.setGlobalMeterProvider(meterProvider)
const tracer = trace.getTracer('app')

const h = new Harness()

/**
 * A relay on `outbox` that handles only topic `z`, polls once a minute and reads the queue gauges
 * every `statsIntervalMs`; `statsCalls` counts its backend's `stats` reads.
 */
function gaugeRelay(outbox: Outbox<any>, statsIntervalMs: number) {
  const inner = h.backend()
  let calls = 0
  const backend: OutboxBackend = {
    ...inner,
    stats(request) {
      calls++
      return inner.stats!(request)
    },
  }
  const relay = h.relay(outbox, {
    backend,
    handlers: { z: () => {} },
    pollIntervalMs: 60_000,
    telemetry: { statsIntervalMs },
  })
  return { relay, statsCalls: () => calls }
}
beforeEach(() => spanExporter.reset())
afterEach(() => h.cleanup())
afterAll(async () => {
  await h.close()
  await meterProvider.shutdown()
  await tracerProvider.shutdown()
})

const spanId = (s: ReadableSpan) => s.spanContext().spanId
const traceId = (s: ReadableSpan) => s.spanContext().traceId
const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId
const finished = (name: string) => spanExporter.getFinishedSpans().filter((s) => s.name === name)

/** Collects outboxkit's metrics now (one export of the in-memory reader). */
async function collect(): Promise<MetricData[]> {
  metricExporter.reset()
  await reader.forceFlush()
  return metricExporter
    .getMetrics()
    .flatMap((rm) => rm.scopeMetrics)
    .filter((sm) => sm.scope.name === INSTRUMENTATION_SCOPE)
    .flatMap((sm) => sm.metrics)
}

/** The data points of metric `name` for `outbox`'s table, keyed by topic (and extra attributes). */
function points<T = number>(
  data: MetricData[],
  name: string,
  outbox: Outbox<any>,
  key: (attributes: Record<string, unknown>) => string = (a) => String(a['messaging.destination.name']),
): Record<string, T> {
  const out: Record<string, T> = {}
  for (const m of data) {
    if (m.descriptor.name !== name) continue
    for (const p of m.dataPoints as DataPoint<T>[]) {
      if (p.attributes['outboxkit.table'] !== outbox.table.display) continue
      out[key(p.attributes)] = p.value
    }
  }
  return out
}

async function headersOf(outbox: Outbox<any>, id: string): Promise<Record<string, string>> {
  const [row] = await h.query<{ headers: Record<string, string> }>(
    `SELECT headers FROM ${tableSql(outbox)} WHERE id = $1`,
    [id],
  )
  return row!.headers
}

describe('tracing', () => {
  test('one trace: request → send (PRODUCER) → process (CONSUMER, child of send) → the side effect, with messaging attributes', async () => {
    const outbox = await h.outbox('otel_tree')
    const relay = h.relay(outbox, {
      handlers: {
        'order.created': () => tracer.startActiveSpan('send email', (span) => span.end()),
      },
      pollIntervalMs: 60_000,
      keepDelivered: true,
    })
    await relay.start()
    const delivered = nextEvent(relay, 'delivered')
    const id = await tracer.startActiveSpan('POST /orders', async (request) => {
      try {
        return (
          await h.transaction((client) =>
            publish(outbox, client, { topic: 'order.created', payload: { n: 1 } }),
          )
        ).id
      } finally {
        request.end()
      }
    })
    await delivered
    await waitFor(() => finished('send email').length === 1, { what: 'the side-effect span' })

    const [request] = finished('POST /orders')
    const [send] = finished('send order.created')
    const [process] = finished('process order.created')
    const [effect] = finished('send email')
    // The tree: request → send → process → send email, all in one trace.
    expect(parentId(send!)).toBe(spanId(request!))
    expect(parentId(process!)).toBe(spanId(send!))
    expect(process!.parentSpanContext?.isRemote).toBe(true)
    expect(parentId(effect!)).toBe(spanId(process!))
    expect(new Set([request, send, process, effect].map((s) => traceId(s!)))).toEqual(
      new Set([traceId(request!)]),
    )

    expect(send!.kind).toBe(SpanKind.PRODUCER)
    expect(send!.attributes).toMatchObject({
      'messaging.system': 'outboxkit',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'order.created',
      'messaging.message.id': id,
      'outboxkit.table': outbox.table.display,
      'outboxkit.published': true,
    })
    expect(process!.kind).toBe(SpanKind.CONSUMER)
    expect(process!.attributes).toMatchObject({
      'messaging.system': 'outboxkit',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'order.created',
      'messaging.message.id': id,
      'outboxkit.message.attempt': 1,
      'outboxkit.outcome': 'delivered',
    })
    expect(process!.status.code).toBe(SpanStatusCode.UNSET)

    // The W3C context in the stored headers is the send span's.
    expect(await headersOf(outbox, id)).toEqual({
      traceparent: `00-${traceId(send!)}-${spanId(send!)}-01`,
    })
  })

  test('each attempt is its own consumer span under the same send span; a failed one carries the error and the outcome', async () => {
    const outbox = await h.outbox('otel_retry')
    let calls = 0
    const relay = h.relay(outbox, {
      handlers: {
        t: () => {
          calls++
          if (calls === 1) throw new Error('smtp 451')
          if (calls === 2) throw new Retry({ delayMs: 10 })
        },
      },
      pollIntervalMs: 100,
      maxAttempts: 5,
      retry: { baseMs: 10, maxMs: 10, jitter: 0 },
    })
    await relay.start()
    const delivered = nextEvent(relay, 'delivered')
    await h.transaction((client) => publish(outbox, client, { topic: 't', payload: {} }))
    await delivered
    const [send] = finished('send t')
    const attempts = finished('process t').sort(
      (a, b) =>
        Number(a.attributes['outboxkit.message.attempt']) - Number(b.attributes['outboxkit.message.attempt']),
    )
    expect(
      attempts.map((s) => [s.attributes['outboxkit.message.attempt'], s.attributes['outboxkit.outcome']]),
    ).toEqual([
      [1, 'retry'],
      [2, 'retry'],
      [3, 'delivered'],
    ])
    for (const s of attempts) expect(parentId(s)).toBe(spanId(send!))
    expect(attempts[0]!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'smtp 451' })
    expect(attempts[0]!.attributes['error.type']).toBe('Error')
    expect(attempts[0]!.events.map((e) => [e.name, e.attributes?.['exception.message']])).toEqual([
      ['exception', 'smtp 451'],
    ])
  })

  test('a Cancel is a consumer span with outcome dead', async () => {
    const outbox = await h.outbox('otel_cancel')
    const relay = h.relay(outbox, {
      handlers: {
        t: () => {
          throw new Cancel('unknown customer')
        },
      },
      pollIntervalMs: 100,
    })
    await relay.start()
    const dead = nextEvent(relay, 'deadLettered')
    await h.transaction((client) => publish(outbox, client, { topic: 't', payload: {} }))
    await dead
    const [span] = finished('process t')
    expect(span!.attributes['outboxkit.outcome']).toBe('dead')
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'unknown customer' })
  })

  test('publishMany: one send span for the batch; every message carries its context', async () => {
    const outbox = await h.outbox('otel_many')
    const results = await h.transaction((client) =>
      publishMany(outbox, client, [
        { topic: 'a', payload: 1 },
        { topic: 'a', payload: 2 },
      ]),
    )
    const [send] = finished('send a')
    expect(send!.attributes).toMatchObject({
      'messaging.batch.message_count': 2,
      'messaging.destination.name': 'a',
    })
    expect(send!.attributes['messaging.message.id']).toBeUndefined()
    for (const r of results) {
      expect((await headersOf(outbox, r.id)).traceparent).toBe(`00-${traceId(send!)}-${spanId(send!)}-01`)
    }
    await h.transaction((client) =>
      publishMany(outbox, client, [
        { topic: 'a', payload: 1 },
        { topic: 'b', payload: 2 },
      ]),
    )
    const [mixed] = finished('send')
    expect(mixed!.attributes['messaging.destination.name']).toBeUndefined()
  })

  test("the publisher's own traceparent and tracestate are kept, and the consumer span continues that trace", async () => {
    const outbox = await h.outbox('otel_own')
    const own = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    const { id } = await h.transaction((client) =>
      publish(outbox, client, {
        topic: 't',
        payload: {},
        headers: { traceparent: own, tracestate: 'k=v', tenant: 't1' },
      }),
    )
    expect(await headersOf(outbox, id)).toEqual({ traceparent: own, tracestate: 'k=v', tenant: 't1' })
    const relay = h.relay(outbox, { handlers: { t: () => {} }, pollIntervalMs: 100 })
    const delivered = nextEvent(relay, 'delivered')
    await relay.start()
    await delivered
    const [process] = finished('process t')
    expect(traceId(process!)).toBe('0af7651916cd43dd8448eb211c80319c')
    expect(parentId(process!)).toBe('b7ad6b7169203331')
    expect(process!.parentSpanContext?.traceState?.get('k')).toBe('v')
  })

  test('a message with no (or a malformed) traceparent gets a root consumer span', async () => {
    const outbox = await h.outbox('otel_root')
    await h.query(
      `INSERT INTO ${tableSql(outbox)} (id, topic, payload, headers) VALUES
         (gen_random_uuid(), 't', '{}', '{}'), (gen_random_uuid(), 't', '{}', '{"traceparent":"00-zz-bad-01"}')`,
    )
    const relay = h.relay(outbox, { handlers: { t: () => {} }, pollIntervalMs: 100 })
    await relay.start()
    await waitFor(() => finished('process t').length === 2, { what: 'two consumer spans' })
    for (const s of finished('process t')) expect(s.parentSpanContext).toBeUndefined()
  })

  test('a failed publish ends its send span with an error status', async () => {
    const outbox = await h.outbox('otel_fail', { migrate: false })
    const err = await h
      .transaction((client) => publish(outbox, client, { topic: 't', payload: {} }))
      .catch((e: unknown) => e)
    // No table on 'table'; no slot on the WAL transport (through-wal-telemetry.test.ts).
    const code = TRANSPORT === 'wal' ? 'WAL_UNAVAILABLE' : 'DATABASE'
    expect((err as { code?: string }).code).toBe(code)
    const [send] = finished('send t')
    expect(send!.status.code).toBe(SpanStatusCode.ERROR)
    expect(send!.attributes['error.type']).toBe(code)
  })

  test('telemetry: false on a relay records no consumer span', async () => {
    const outbox = await h.outbox('otel_off')
    const relay = h.relay(outbox, { handlers: { t: () => {} }, pollIntervalMs: 100, telemetry: false })
    await relay.start()
    const delivered = nextEvent(relay, 'delivered')
    await h.publish(outbox, [{ topic: 't', payload: {} }])
    await delivered
    expect(finished('send t')).toHaveLength(1)
    expect(finished('process t')).toEqual([])
  })
})

describe('metrics', () => {
  test('counters by topic and histograms of handler duration and end-to-end delay', async () => {
    const outbox = await h.outbox('otel_counters')
    const relay = h.relay(outbox, {
      handlers: {
        ok: async () => {
          await new Promise((r) => setTimeout(r, 30))
        },
        flaky: (m) => {
          if (m.attempts === 1) throw new Error('first time fails')
        },
        doomed: () => {
          throw new Cancel('never')
        },
      },
      pollIntervalMs: 100,
      retry: { baseMs: 10, maxMs: 10, jitter: 0 },
    })
    await relay.start()
    const before = await collect()
    expect(points(before, metricNames.published, outbox)).toEqual({})
    const messages = [
      ...Array.from({ length: 3 }, () => ({ topic: 'ok', payload: {} })),
      { topic: 'flaky', payload: {} },
      { topic: 'doomed', payload: {} },
      { topic: 'doomed', payload: {}, dedupKey: 'd1' },
    ]
    await h.publish(outbox, messages)
    // A dedup no-op is not counted as published.
    await h.publish(outbox, [{ topic: 'doomed', payload: {}, dedupKey: 'd1' }])
    await waitFor(() => relay.stats.delivered === 4 && relay.stats.deadLettered === 2, {
      what: 'all outcomes',
    })

    const data = await collect()
    expect(points(data, metricNames.published, outbox)).toEqual({ ok: 3, flaky: 1, doomed: 2 })
    expect(points(data, metricNames.delivered, outbox)).toEqual({ ok: 3, flaky: 1 })
    expect(points(data, metricNames.retried, outbox)).toEqual({ flaky: 1 })
    expect(
      points(
        data,
        metricNames.deadLettered,
        outbox,
        (a) => `${a['messaging.destination.name']}/${a['outboxkit.dead_letter.reason']}`,
      ),
    ).toEqual({ 'doomed/cancel': 2 })
    const durations = points<Histogram>(data, metricNames.handlerDuration, outbox)
    expect(durations.ok!.count).toBe(3)
    expect(durations.ok!.min).toBeGreaterThanOrEqual(0.025) // seconds: each ok handler sleeps 30 ms
    expect(durations.ok!.max).toBeLessThan(5)
    const delays = points<Histogram>(data, metricNames.deliveryDelay, outbox)
    expect(delays.ok!.count).toBe(3)
    expect(delays.flaky!.count).toBe(1)
    expect(delays.flaky!.min).toBeGreaterThanOrEqual(0.01) // delivered after a 10 ms backoff
    const descriptor = data.find((m) => m.descriptor.name === metricNames.handlerDuration)!.descriptor
    expect(descriptor.unit).toBe('s')
  })

  test('queue gauges: depth by topic and state, oldest pending age, oldest due lag, read at most once per interval', async () => {
    const outbox = await h.outbox('otel_gauges')
    await h.query(
      `INSERT INTO ${tableSql(outbox)} (id, topic, payload, state, attempts, created_at, available_at) VALUES
         (gen_random_uuid(), 'a', '{}', 'pending', 0, now() - interval '90 seconds', now() - interval '60 seconds'),
         (gen_random_uuid(), 'a', '{}', 'pending', 0, now() - interval '10 seconds', now() + interval '1 hour'),
         (gen_random_uuid(), 'b', '{}', 'dead', 3, now() - interval '1 hour', now()),
         (gen_random_uuid(), 'b', '{}', 'dead', 3, now() - interval '1 hour', now()),
         (gen_random_uuid(), 'c', '{}', 'delivered', 1, now(), now())`,
    )
    // Handles only topic 'z', so the seeded rows stay as they are.
    const { relay, statsCalls } = gaugeRelay(outbox, 60_000)
    expect(points(await collect(), metricNames.queueDepth, outbox)).toEqual({}) // not before start
    await relay.start()
    const data = await collect()
    const depth = points(
      data,
      metricNames.queueDepth,
      outbox,
      (a) => `${a['messaging.destination.name']}/${a['outboxkit.state']}`,
    )
    expect(depth).toEqual({
      'a/pending': 2,
      'a/processing': 0,
      'a/dead': 0,
      'b/pending': 0,
      'b/processing': 0,
      'b/dead': 2,
      // The relay's own topic reports zeros rather than nothing.
      'z/pending': 0,
      'z/processing': 0,
      'z/dead': 0,
    })
    const age = points(data, metricNames.oldestPendingAge, outbox, () => 'table').table!
    const lag = points(data, metricNames.oldestDueLag, outbox, () => 'table').table!
    expect(age).toBeGreaterThanOrEqual(90)
    expect(age).toBeLessThan(120)
    expect(lag).toBeGreaterThanOrEqual(60)
    expect(lag).toBeLessThan(90)
    expect(statsCalls()).toBe(1)
    await collect()
    await collect()
    expect(statsCalls()).toBe(1) // within statsIntervalMs: the last read is reused
  })

  test('queue gauges re-read once the interval has passed, and stop reading when the relay stops', async () => {
    const outbox = await h.outbox('otel_interval')
    const { relay, statsCalls } = gaugeRelay(outbox, 200)
    await relay.start()
    await collect()
    expect(statsCalls()).toBe(1)
    await h.query(
      `INSERT INTO ${tableSql(outbox)} (id, topic, payload, state) VALUES (gen_random_uuid(), 'q', '{}', 'dead')`,
    )
    const seen = await waitFor(
      async () =>
        points(
          await collect(),
          metricNames.queueDepth,
          outbox,
          (a) => `${a['messaging.destination.name']}/${a['outboxkit.state']}`,
        )['q/dead'],
      { intervalMs: 50, what: 'the new dead row in the gauge' },
    )
    expect(seen).toBe(1)
    expect(statsCalls()).toBeGreaterThanOrEqual(2)

    await relay.stop()
    const atStop = statsCalls()
    await observeFor(300) // longer than statsIntervalMs: a live callback would query again
    await collect()
    expect(statsCalls()).toBe(atStop)
  })
})

// ---------------------------------------------------------------------------------------------
// The trace picture of docs/operations.md: rendered from the spans of a real run.
// `OUTBOXKIT_WRITE_DOCS=1 npx vitest run packages/core/test/ops-telemetry.test.ts` rewrites it.

interface Bar {
  span: ReadableSpan
  depth: number
}

function ms(span: ReadableSpan, which: 'startTime' | 'endTime'): number {
  const [s, ns] = span[which]
  return s * 1_000 + ns / 1e6
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!)
}

/** Renders one trace as an SVG timeline: one row per span, indented by depth, bars on a shared time axis. */
function renderTraceSvg(spans: ReadableSpan[], title: string): string {
  const byId = new Map(spans.map((s) => [spanId(s), s]))
  const children = new Map<string | undefined, ReadableSpan[]>()
  for (const s of spans) {
    const p = parentId(s) && byId.has(parentId(s)!) ? parentId(s) : undefined
    children.set(p, [...(children.get(p) ?? []), s])
  }
  const bars: Bar[] = []
  const walk = (parent: string | undefined, depth: number) => {
    for (const s of (children.get(parent) ?? []).sort((a, b) => ms(a, 'startTime') - ms(b, 'startTime'))) {
      bars.push({ span: s, depth })
      walk(spanId(s), depth + 1)
    }
  }
  walk(undefined, 0)
  const t0 = Math.min(...spans.map((s) => ms(s, 'startTime')))
  const t1 = Math.max(...spans.map((s) => ms(s, 'endTime')))
  const total = Math.max(1, t1 - t0)
  const labelW = 330
  const chartW = 560
  const rowH = 34
  const top = 58
  const width = labelW + chartW + 90
  const height = top + bars.length * rowH + 70
  const x = (t: number) => labelW + ((t - t0) / total) * chartW
  const kindName = ['internal', 'server', 'client', 'producer', 'consumer']
  const colour = (s: ReadableSpan) =>
    s.status.code === SpanStatusCode.ERROR
      ? '#d9534f'
      : s.kind === SpanKind.PRODUCER
        ? '#3b7dd8'
        : s.kind === SpanKind.CONSUMER
          ? '#2e9d5b'
          : '#8a8f98'
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="13" role="img">`,
    '<title>A trace of one outboxkit message: the publish span and its consumer spans</title>',
    `<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#3b7dd8"/></marker></defs>`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="16" y="26" font-size="16" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="16" y="45" fill="#555">trace ${traceId(spans[0]!)} · ${spans.length} spans · ${total.toFixed(0)} ms</text>`,
  ]
  for (let i = 0; i <= 4; i++) {
    const gx = labelW + (chartW * i) / 4
    out.push(
      `<line x1="${gx}" y1="${top - 4}" x2="${gx}" y2="${top + bars.length * rowH}" stroke="#e3e3e3"/>`,
      `<text x="${gx}" y="${top + bars.length * rowH + 16}" fill="#777" text-anchor="middle" font-size="11">${((total * i) / 4).toFixed(0)} ms</text>`,
    )
  }
  const rowOf = new Map<string, number>()
  bars.forEach(({ span, depth }, i) => {
    const y = top + i * rowH
    rowOf.set(spanId(span), i)
    const start = x(ms(span, 'startTime'))
    const w = Math.max(3, x(ms(span, 'endTime')) - start)
    const attempt = span.attributes['outboxkit.message.attempt']
    const outcome = span.attributes['outboxkit.outcome']
    const note = attempt ? ` · attempt ${attempt}: ${outcome}` : ''
    out.push(
      `<text x="${16 + depth * 18}" y="${y + 15}">${escapeXml(span.name)}</text>`,
      `<text x="${16 + depth * 18}" y="${y + 28}" fill="#888" font-size="10">${kindName[span.kind]}${escapeXml(note)}</text>`,
      `<rect x="${start.toFixed(1)}" y="${y + 4}" width="${w.toFixed(1)}" height="20" rx="3" fill="${colour(span)}"/>`,
      `<text x="${(start + w + 6).toFixed(1)}" y="${y + 18}" fill="#555" font-size="11">${(ms(span, 'endTime') - ms(span, 'startTime')).toFixed(1)} ms</text>`,
    )
  })
  // Dashed arrows: from each PRODUCER span to the CONSUMER spans it is the parent of (commit, wake-up, claim).
  for (const { span } of bars) {
    if (span.kind !== SpanKind.CONSUMER) continue
    const p = parentId(span) ? byId.get(parentId(span)!) : undefined
    if (!p || p.kind !== SpanKind.PRODUCER) continue
    const from = rowOf.get(spanId(p))!
    const to = rowOf.get(spanId(span))!
    const x1 = (x(ms(p, 'startTime')) + x(ms(p, 'endTime'))) / 2
    const x2 = x(ms(span, 'startTime'))
    const y1 = top + from * rowH + 24
    const y2 = top + to * rowH + 14
    out.push(
      `<path d="M ${x1.toFixed(1)} ${y1} C ${x1.toFixed(1)} ${y2}, ${x1.toFixed(1)} ${y2}, ${(x2 - 2).toFixed(1)} ${y2}" fill="none" stroke="#3b7dd8" stroke-width="1.2" stroke-dasharray="4 3" marker-end="url(#arrow)"/>`,
    )
  }
  const legendY = top + bars.length * rowH + 44
  const legend: [string, string][] = [
    ['#8a8f98', 'application span'],
    ['#3b7dd8', 'PRODUCER: publish (send)'],
    ['#2e9d5b', 'CONSUMER: relay delivery (process)'],
    ['#d9534f', 'failed attempt (error status)'],
  ]
  legend.forEach(([c, label], i) => {
    const lx = 16 + i * 225
    out.push(
      `<rect x="${lx}" y="${legendY - 10}" width="12" height="12" rx="2" fill="${c}"/>`,
      `<text x="${lx + 18}" y="${legendY}" font-size="11" fill="#333">${label}</text>`,
    )
  })
  out.push('</svg>')
  return `${out.join('\n')}\n`
}

describe('trace picture', () => {
  test('a real run renders as one trace: request, publish, a failed attempt, the retry and its side effect', async () => {
    const outbox = await h.outbox('otel_picture')
    const relay = h.relay(outbox, {
      handlers: {
        'order.created': async (m) => {
          await tracer.startActiveSpan('POST smtp.example/send', async (span) => {
            await new Promise((r) => setTimeout(r, m.attempts === 1 ? 15 : 25))
            span.end()
          })
          if (m.attempts === 1) throw new Error('smtp 451: try again later')
        },
      },
      pollIntervalMs: 60_000,
      retry: { baseMs: 40, maxMs: 40, jitter: 0 },
    })
    await relay.start()
    /** One business request that publishes an order, delivered (after one failure); returns its spans. */
    const order = async (orderId: string): Promise<ReadableSpan[]> => {
      spanExporter.reset()
      const delivered = nextEvent(relay, 'delivered')
      await tracer.startActiveSpan('POST /orders', async (request) => {
        await h.transaction(async (client) => {
          await tracer.startActiveSpan('INSERT orders', async (span) => {
            await client.query('SELECT pg_sleep(0.005)')
            span.end()
          })
          await publish(outbox, client, { topic: 'order.created', payload: { orderId } })
        })
        request.end()
      })
      await delivered
      await waitFor(() => finished('POST smtp.example/send').length === 2, { what: 'both side-effect spans' })
      const [request] = finished('POST /orders')
      return spanExporter.getFinishedSpans().filter((s) => traceId(s) === traceId(request!))
    }
    // The first run warms up the process (module loading, the first error's stack formatting), as a
    // long-running service is; the picture is of the second.
    await order('o-1')
    const spans = await order('o-2')
    expect(spans.map((s) => s.name).sort()).toEqual(
      [
        'INSERT orders',
        'POST /orders',
        'POST smtp.example/send',
        'POST smtp.example/send',
        'process order.created',
        'process order.created',
        'send order.created',
      ].sort(),
    )
    const svg = renderTraceSvg(
      spans,
      'One trace: the business request, its publish, and the relay delivering it',
    )
    expect(svg).toContain('process order.created')
    expect(svg).toContain('consumer · attempt 1: retry')
    if (process.env.OUTBOXKIT_WRITE_DOCS === '1') {
      writeFileSync(new URL('../../../docs/images/trace.svg', import.meta.url), svg)
    }
  })
})
