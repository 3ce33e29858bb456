/**
 * Lazy, optional access to `@opentelemetry/api`. Core never imports it statically: without the
 * package every hook is a no-op and nothing is loaded; with it (and no SDK registered) the API's
 * own no-op tracer and meter keep the cost to a few function calls.
 */
export type OtelApi = typeof import('@opentelemetry/api')

// A variable specifier: bundlers leave it alone instead of failing when the package is absent.
const SPECIFIER: string = '@opentelemetry/api'

let api: OtelApi | null | undefined
let loading: Promise<OtelApi | null> | undefined

function pick(mod: unknown): OtelApi | null {
  const m = mod as Partial<OtelApi> & { default?: Partial<OtelApi> }
  if (m && typeof m.trace?.getTracer === 'function' && typeof m.metrics?.getMeter === 'function') {
    return m as OtelApi
  }
  const d = m?.default
  if (d && typeof d.trace?.getTracer === 'function' && typeof d.metrics?.getMeter === 'function') {
    return d as OtelApi
  }
  return null
}

/** Loads `@opentelemetry/api` once; resolves to `null` when it is not installed. Never rejects. */
export function loadOtel(): Promise<OtelApi | null> {
  if (api !== undefined) return Promise.resolve(api)
  loading ??= import(SPECIFIER).then(
    (mod: unknown) => (api = pick(mod)),
    () => (api = null),
  )
  return loading
}

/** The API once {@link loadOtel} has settled: the module, `null` when absent, `undefined` before. */
export function otelNow(): OtelApi | null | undefined {
  return api
}
