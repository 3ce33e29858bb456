// PROTOTYPE measurement: where core's relay allocates while draining (V8 sampling heap profiler,
// in process). `tsx src/prototypes/alloc-profile.ts --count=50000 --relay='{"concurrency":400}'`
import { Session } from 'node:inspector/promises'
import { fileURLToPath } from 'node:url'
import { createRelay, defineOutbox } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import { loadOutboxBacklog, resetOutbox } from '../contenders/outboxkit.js'
import { benchUrl, ensureBenchDatabase } from '../db.js'
import { round, waitUntil } from '../stats.js'
import { OUTBOX_TABLE, TOPIC } from '../workload.js'

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number }
  selfSize: number
  children: HeapNode[]
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureBenchDatabase()
  const url = benchUrl()
  const count = Number(process.argv.find((a) => a.startsWith('--count='))?.slice(8) ?? 50_000)
  const options = JSON.parse(process.argv.find((a) => a.startsWith('--relay='))?.slice(8) ?? '{}')
  await resetOutbox(url)
  await loadOutboxBacklog(url, count)
  const relay = createRelay(defineOutbox({ table: OUTBOX_TABLE }), {
    backend: pgBackend({ connectionString: url }),
    handlers: { [TOPIC]: () => {} },
    ...options,
  })
  const session = new Session()
  session.connect()
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  })
  await relay.start()
  await waitUntil('the drain', () => relay.stats.delivered >= count, 600_000, 2)
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: HeapNode } }
  await relay.stop()
  const by = new Map<string, number>()
  let total = 0
  const walk = (n: HeapNode) => {
    const f = n.callFrame
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^file:\/\/\/work\/main\//, '').replace(/.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, '')}:${f.lineNumber + 1}`
    by.set(key, (by.get(key) ?? 0) + n.selfSize)
    total += n.selfSize
    for (const c of n.children) walk(c)
  }
  walk(profile.head)
  console.log(
    `sampled allocation ${round(total / 2 ** 20, 1)} MiB over ${count} messages (${round(total / count, 0)} B per message)`,
  )
  for (const [k, v] of [...by.entries()].sort((a, b) => b[1] - a[1]).slice(0, 30))
    console.log(`${String(round((100 * v) / total, 1)).padStart(6)} %  ${round(v / count, 0)} B/msg  ${k}`)
}
