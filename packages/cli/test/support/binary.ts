import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** What one run of the CLI gave. */
export interface Run {
  code: number
  stdout: string
  stderr: string
}

// The real binary, run from source: node + tsx, with the root tsconfig mapping @outboxkit/* to src.
const root = fileURLToPath(new URL('../../../../', import.meta.url))
const bin = fileURLToPath(new URL('../../src/cli.ts', import.meta.url))
const hider = new URL('./hide-packages.mjs', import.meta.url).href

/**
 * Runs the real `outboxkit` binary in a child process with exactly `env` (plus the parent's
 * environment without DATABASE_URL and OUTBOX_TABLE). `hide` names packages made unresolvable, as
 * if they were not installed (see hide-packages.mjs).
 */
export function binary(
  args: string[],
  env: Record<string, string | undefined>,
  options: { hide?: readonly string[] } = {},
): Promise<Run> {
  const { DATABASE_URL: _u, OUTBOX_TABLE: _t, ...base } = process.env
  const hide = options.hide ?? []
  const loaders = ['--import', 'tsx', ...(hide.length > 0 ? ['--import', hider] : [])]
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...loaders, bin, ...args],
      {
        cwd: root,
        env: { ...base, ...env, OUTBOXKIT_TEST_HIDE_PACKAGES: hide.join(',') } as NodeJS.ProcessEnv,
        timeout: 90_000,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}
