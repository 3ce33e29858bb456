// Tracing and metrics (ops-telemetry.test.ts) on the WAL transport, relays on pgBackend: consumer
// spans of slot messages continue their send spans, counters, histograms and queue gauges (see
// support/through-wal.ts).
import { runThroughWal } from './support/through-wal.js'

runThroughWal('pg', 'telemetry')
