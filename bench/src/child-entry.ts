/**
 * The child side of {@link runChild} (child-runner.ts): reads the job from `argv[2]`, runs it, and
 * reports the result (with the process's RSS before the job and its exact peak) or the error over
 * IPC, then exits. Every child entry (child.ts and the bundled ones) is this call.
 */
export async function serveJob(run: (job: any, progress: (data: unknown) => void) => Promise<unknown>) {
  const job = JSON.parse(process.argv[2] ?? '{}')
  const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10
  try {
    const baselineRssMiB = mib(process.memoryUsage.rss())
    const result = await run(job, (data) => process.send?.({ type: 'progress', data }))
    const maxRssMiB = Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10
    process.send?.({ type: 'result', result, maxRssMiB, baselineRssMiB }, () => process.exit(0))
  } catch (err) {
    const error = err instanceof Error ? (err.stack ?? err.message) : String(err)
    process.send?.({ type: 'error', error }, () => process.exit(1))
  }
}
