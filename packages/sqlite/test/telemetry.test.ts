import { createRequire } from 'node:module'
import { uniqueTableName, waitFor } from '@outboxkit/conformance'
import { defineOutbox, migrate, type PublishResult } from '@outboxkit/core'
import { publish, sqliteBackend } from '@outboxkit/sqlite'
import { afterAll, expect, test } from 'vitest'
import { tempDatabase } from './support.js'

// The OpenTelemetry packages are development dependencies of @outboxkit/core: load them from
// there, and register the SDK globally as an application would (core finds the same global API).
const fromCore = createRequire(new URL('../../core/package.json', import.meta.url))
const { context, trace, SpanKind } = fromCore(
  '@opentelemetry/api',
) as typeof import('../../core/node_modules/@opentelemetry/api/build/src/index.js')
const { AsyncLocalStorageContextManager } = fromCore(
  '@opentelemetry/context-async-hooks',
) as typeof import('../../core/node_modules/@opentelemetry/context-async-hooks/build/src/index.js')
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = fromCore(
  '@opentelemetry/sdk-trace-base',
) as typeof import('../../core/node_modules/@opentelemetry/sdk-trace-base/build/src/index-shim.js')

const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
trace.setGlobalTracerProvider(provider)
const temp = tempDatabase('telemetry')
afterAll(async () => {
  await provider.shutdown()
  temp.cleanup()
})

test('a synchronous publish runs in a PRODUCER span (child of the active span) whose traceparent goes into the headers', async () => {
  const db = temp.open()
  const table = uniqueTableName('sqlite_otel')
  const outbox = defineOutbox({ table })
  await migrate(outbox, sqliteBackend(db))
  const headersOf = (id: string) =>
    JSON.parse(db.prepare(`SELECT headers FROM "${table}" WHERE id = ?`).pluck().get(id) as string) as Record<
      string,
      string
    >
  // Nothing is awaited before a synchronous write, so publishes are untraced until the
  // @opentelemetry/api module has loaded (the first publish starts loading it).
  let traced: { id: string; requestSpanId: string } | undefined
  await waitFor(
    async () => {
      let pending: Promise<PublishResult> | undefined
      let requestSpanId = ''
      trace.getTracer('app').startActiveSpan('POST /orders', (span) => {
        requestSpanId = span.spanContext().spanId
        db.transaction(() => {
          pending = publish(outbox, db, { topic: 'order.created', payload: { n: 1 } })
        })()
        span.end()
      })
      const { id } = await pending!
      if (headersOf(id).traceparent) traced = { id, requestSpanId }
      return traced
    },
    { what: 'a traced publish', timeoutMs: 5_000 },
  )
  const { id, requestSpanId } = traced!
  const [send] = exporter.getFinishedSpans().filter((s) => s.attributes['messaging.message.id'] === id)
  expect(send).toBeDefined()
  expect(send!.name).toBe('send order.created')
  expect(send!.kind).toBe(SpanKind.PRODUCER)
  expect(send!.parentSpanContext?.spanId).toBe(requestSpanId)
  expect(send!.attributes).toMatchObject({
    'messaging.system': 'outboxkit',
    'messaging.destination.name': 'order.created',
    'outboxkit.table': table,
    'outboxkit.published': true,
  })
  const { traceId, spanId } = send!.spanContext()
  expect(headersOf(id).traceparent).toBe(`00-${traceId}-${spanId}-01`)
})
