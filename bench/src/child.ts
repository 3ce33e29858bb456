import { runJob } from './jobs.js'

const job = JSON.parse(process.argv[2] ?? '{}')
const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10
try {
  const baselineRssMiB = mib(process.memoryUsage.rss())
  const result = await runJob(job, (data) => process.send?.({ type: 'progress', data }))
  const maxRssMiB = Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10
  process.send?.({ type: 'result', result, maxRssMiB, baselineRssMiB }, () => process.exit(0))
} catch (err) {
  const error = err instanceof Error ? (err.stack ?? err.message) : String(err)
  process.send?.({ type: 'error', error }, () => process.exit(1))
}
