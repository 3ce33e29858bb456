import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Job } from './jobs.js'

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url))
const TSCONFIG = fileURLToPath(new URL('../../tsconfig.json', import.meta.url))
const TSX = import.meta.resolve('tsx')

/** What a child job reports back. */
export interface ChildOutcome<T> {
  result: T
  /** Peak RSS sampled from /proc every 50 ms, in MiB. */
  sampledPeakRssMiB: number
  /** The child's own `process.resourceUsage().maxRSS` at the end, in MiB (exact peak). */
  maxRssMiB: number
  /** RSS once the job's modules were loaded, before it started, in MiB. */
  baselineRssMiB: number
  /** RSS samples: [ms since start, MiB]. */
  rssSamples: [number, number][]
  /** Progress messages the job sent while running. */
  progress: unknown[]
}

function rssOf(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const m = /VmRSS:\s+(\d+) kB/.exec(status)
    return m ? Number(m[1]) / 1024 : undefined
  } catch {
    return undefined
  }
}

/**
 * Runs `job` in a fresh Node process (TypeScript through tsx, `@outboxkit/*` mapped to source by the
 * root tsconfig), samples its RSS, and resolves with its result. Each contender gets a clean heap,
 * its own connections and its own event loop. `J` is the job union the entry understands: jobs.ts's
 * {@link Job} for child.ts, another one for a bundled entry given as `options.script`.
 */
export function runChild<T, J extends { kind: string } = Job>(
  job: J,
  options: {
    /** A plain JavaScript entry (bundled) to run instead of child.ts through tsx. */
    script?: string
    nodeArgs?: string[]
    onProgress?: (p: unknown) => void
    control?: (send: (m: unknown) => void) => void
  } = {},
): Promise<ChildOutcome<T>> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      options.script
        ? [...(options.nodeArgs ?? []), options.script, JSON.stringify(job)]
        : [...(options.nodeArgs ?? []), '--import', TSX, CHILD, JSON.stringify(job)],
      {
        env: { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    )
    const t0 = performance.now()
    const samples: [number, number][] = []
    let peak = 0
    const sampler = setInterval(() => {
      const rss = rssOf(child.pid!)
      if (rss === undefined) return
      peak = Math.max(peak, rss)
      samples.push([Math.round(performance.now() - t0), Math.round(rss * 10) / 10])
    }, 50)
    const progress: unknown[] = []
    let outcome: { result: T; maxRssMiB: number; baselineRssMiB: number } | undefined
    let failure: string | undefined
    child.on('message', (m: any) => {
      if (m?.type === 'result') outcome = m
      else if (m?.type === 'error') failure = m.error
      else if (m?.type === 'progress') {
        progress.push(m.data)
        options.onProgress?.(m.data)
      }
    })
    options.control?.((m) => child.connected && child.send(m as object))
    child.on('error', (err) => {
      clearInterval(sampler)
      reject(err)
    })
    child.on('exit', (code) => {
      clearInterval(sampler)
      if (outcome) {
        resolve({
          result: outcome.result,
          maxRssMiB: outcome.maxRssMiB,
          baselineRssMiB: outcome.baselineRssMiB,
          sampledPeakRssMiB: Math.round(peak * 10) / 10,
          rssSamples: samples,
          progress,
        })
      } else reject(new Error(`bench child ${job.kind} failed (exit ${code}): ${failure ?? 'no result'}`))
    })
  })
}
