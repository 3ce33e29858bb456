// Entry of the backends scenario's relay processes: only its drain job, so that it can be bundled
// to plain JavaScript (see bundle.ts) and start in a fraction of the time tsx takes on each run.
import { type BackendsJobSpec, runBackendsJob } from './backends-job.js'

const job = JSON.parse(process.argv[2] ?? '{}') as { kind: 'backends'; spec: BackendsJobSpec }
const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10
try {
  const baselineRssMiB = mib(process.memoryUsage.rss())
  const result = await runBackendsJob(job.spec, (data) => process.send?.({ type: 'progress', data }))
  const maxRssMiB = Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10
  process.send?.({ type: 'result', result, maxRssMiB, baselineRssMiB }, () => process.exit(0))
} catch (err) {
  const error = err instanceof Error ? (err.stack ?? err.message) : String(err)
  process.send?.({ type: 'error', error }, () => process.exit(1))
}
