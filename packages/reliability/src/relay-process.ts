import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { RELAY_CONFIG_ENV, type RelayWorkerConfig, type WorkerLine } from './relay-worker-config.js'

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))
const workerPath = fileURLToPath(new URL('./relay-worker.ts', import.meta.url))

/** How a relay process ended. */
export interface RelayExit {
  code: number | null
  signal: NodeJS.Signals | null
}

/** A relay running in a child process (see `relay-worker.ts`). */
export interface RelayProcess {
  /** The OS process id, also written to the ledger by its handlers. */
  readonly pid: number
  readonly applicationName: string
  /** Resolves when the relay has started; rejects if the process exits first. */
  readonly ready: Promise<void>
  /** Resolves when the process has exited. */
  readonly exited: Promise<RelayExit>
  /** Whether the process has not exited. */
  readonly alive: boolean
  /** Whether the relay has started (and the process has not exited). */
  readonly running: boolean
  /** Errors the relay reported (`error` events), in order. */
  readonly errors: readonly Extract<WorkerLine, { type: 'error' }>[]
  /** Why the relay said LISTEN cannot hear (its `listenUnavailable` event), if it did. */
  readonly listenUnavailable: string | undefined
  /** The last lines of stderr, for diagnostics. */
  stderr(): string
  /** Sends a signal (SIGKILL: crash; SIGTERM: graceful stop). */
  kill(signal: NodeJS.Signals): void
}

/**
 * Starts a relay in a child process: `node --import tsx relay-worker.ts` with the root tsconfig,
 * so `@outboxkit/*` resolve to the workspace sources (no build needed).
 */
export function spawnRelayProcess(config: RelayWorkerConfig): RelayProcess {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', workerPath], {
    cwd: repoRoot,
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: `${repoRoot}tsconfig.json`,
      [RELAY_CONFIG_ENV]: JSON.stringify(config),
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  if (child.pid === undefined) throw new Error('could not spawn a relay process')
  const errors: Extract<WorkerLine, { type: 'error' }>[] = []
  let stderr = ''
  let alive = true
  let started = false
  let listenUnavailable: string | undefined
  let onReady!: () => void
  let onEarlyExit!: (error: Error) => void
  const ready = new Promise<void>((resolve, reject) => {
    onReady = resolve
    onEarlyExit = reject
  })
  ready.catch(() => {})
  const exited = new Promise<RelayExit>((resolve) => {
    child.on('exit', (code, signal) => {
      alive = false
      onEarlyExit(
        new Error(`relay process ${child.pid} exited (${signal ?? code}) before it was ready: ${stderr}`),
      )
      resolve({ code, signal })
    })
  })
  let buffer = ''
  child.stdout!.setEncoding('utf8')
  child.stdout!.on('data', (chunk: string) => {
    buffer += chunk
    let nl = buffer.indexOf('\n')
    while (nl >= 0) {
      const text = buffer.slice(0, nl)
      buffer = buffer.slice(nl + 1)
      nl = buffer.indexOf('\n')
      let line: WorkerLine
      try {
        line = JSON.parse(text) as WorkerLine
      } catch {
        continue
      }
      if (line.type === 'ready') {
        started = true
        onReady()
      } else if (line.type === 'error') errors.push(line)
      else if (line.type === 'listenUnavailable') listenUnavailable = line.reason
    }
  })
  child.stderr!.setEncoding('utf8')
  child.stderr!.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4_000)
  })
  child.stdin!.on('error', () => {})
  return {
    pid: child.pid,
    applicationName: config.applicationName,
    ready,
    exited,
    get alive() {
      return alive
    },
    get running() {
      return alive && started
    },
    errors,
    get listenUnavailable() {
      return listenUnavailable
    },
    stderr: () => stderr,
    kill(signal) {
      if (alive) child.kill(signal)
    },
  }
}
