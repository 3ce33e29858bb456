import { spawnSync } from 'node:child_process'
import { existsSync, realpathSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { bundle } from '../bundle.js'
import { runChild } from '../child-runner.js'
import type { CompareJob } from './jobs.js'

/** One side of the comparison: a built tree and the job entry bundled into it. */
export interface Build {
  /** `old` or `new`. */
  side: 'old' | 'new'
  /** What the user asked for: a revision, or `working tree`. */
  rev: string
  /** The commit (short), with `+ uncommitted changes` for a dirty working tree. */
  commit: string
  /** The root of the tree: a git worktree under /tmp, or the repository itself. */
  root: string
  /** The bundled job entry inside `root` (bench/results/tmp/compare/), resolving that tree's packages. */
  script: string
}

/** The repository this bench lives in. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/$/, '')

/** The packages a comparison job imports; only these (and their dependencies) are built. */
const BUILD_FILTER = '@outboxkit/pg...'

function run(cmd: string, args: string[], cwd: string, log: (line: string) => void): string {
  log(`  $ ${cmd} ${args.join(' ')}  (in ${cwd})`)
  const out = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  if (out.status !== 0) {
    throw new Error(
      `bench:compare: \`${cmd} ${args.join(' ')}\` failed in ${cwd} (exit ${out.status}):\n${out.stdout}${out.stderr}`,
    )
  }
  return out.stdout.trim()
}

const git = (args: string[], cwd = REPO_ROOT) => run('git', args, cwd, () => {})

/** The full commit hash of `rev` in the repository; throws when it names no commit. */
export function resolveCommit(rev: string): string {
  try {
    return git(['rev-parse', '--verify', '--quiet', `${rev}^{commit}`])
  } catch {
    throw new Error(`bench:compare: ${rev} names no commit in ${REPO_ROOT}`)
  }
}

/**
 * A detached git worktree of `commit` at `<dir>/<commit>`, outside the repository, reused when
 * it is already there at that commit (its install and build are redone, both quick when current).
 */
export function worktreeOf(commit: string, dir: string, log: (line: string) => void): string {
  const path = join(dir, commit.slice(0, 12))
  if (existsSync(join(path, '.git'))) {
    const head = git(['rev-parse', 'HEAD'], path)
    if (head === commit) return path
    throw new Error(`bench:compare: ${path} is a worktree at ${head}, not ${commit}: remove it first`)
  }
  git(['worktree', 'prune'])
  run('git', ['worktree', 'add', '--detach', path, commit], REPO_ROOT, log)
  return path
}

/** Installs the tree's dependencies from the lockfile (offline from the store first, else online). */
export function install(root: string, log: (line: string) => void): void {
  try {
    run('pnpm', ['install', '--frozen-lockfile', '--offline'], root, log)
  } catch (err) {
    log(`  offline install failed (${(err as Error).message.split('\n')[0]}); retrying online`)
    run('pnpm', ['install', '--frozen-lockfile'], root, log)
  }
}

/** Builds `@outboxkit/core` and `@outboxkit/pg` (their `dist/`, what the package names resolve to). */
export function buildPackages(root: string, log: (line: string) => void): void {
  try {
    run('pnpm', ['--filter', BUILD_FILTER, 'run', 'build'], root, log)
  } catch (err) {
    const hint =
      root === REPO_ROOT
        ? '\n(the working tree does not build: retry once it does, or compare a commit with --new=<rev>)'
        : ''
    throw new Error(`${(err as Error).message}${hint}`)
  }
}

/**
 * Bundles compare/child.ts into `root`'s bench/results/tmp/compare/ with `@outboxkit/*` and the
 * drivers left as imports: Node resolves them from that tree's bench/node_modules, so each build
 * runs the same job code against its own packages, in its own module graph.
 */
export async function bundleJobInto(root: string): Promise<string> {
  const dir = join(root, 'bench/results/tmp/compare')
  rmSync(dir, { recursive: true, force: true })
  return bundle(
    fileURLToPath(new URL('./child.ts', import.meta.url)),
    join(dir, 'compare-child.mjs'),
    ['@outboxkit/*', 'pg', 'postgres', 'graphile-worker', 'pg-boss'],
    { splitting: true },
  )
}

/**
 * Makes one side ready: `rev` checked out into a worktree under `dir` (or, for `working tree`,
 * this repository as it is), installed, `@outboxkit/core` and `@outboxkit/pg` built, job bundled.
 */
export async function prepareBuild(
  side: Build['side'],
  rev: string,
  dir: string,
  log: (line: string) => void,
): Promise<Build> {
  let root = REPO_ROOT
  let commit: string
  if (rev === 'working tree') {
    commit = git(['rev-parse', '--short', 'HEAD'])
    if (git(['status', '--porcelain', '--untracked-files=no'])) commit += ' + uncommitted changes'
  } else {
    const full = resolveCommit(rev)
    commit = full.slice(0, 7)
    root = worktreeOf(full, dir, log)
    install(root, log)
  }
  buildPackages(root, log)
  const build = { side, rev, commit, root, script: await bundleJobInto(root) }
  await checkResolution(build, log)
  return build
}

/**
 * Runs a `resolve` job on `build` and throws unless `@outboxkit/core` and `@outboxkit/pg` resolve
 * to the built `dist/` of that tree and `pg` to that tree's install: the two sides never share a module.
 */
export async function checkResolution(build: Build, log: (line: string) => void): Promise<void> {
  const { result } = await runChild<Record<string, string>, CompareJob>(
    { kind: 'resolve' },
    { script: build.script },
  )
  const inside = pathToFileURL(`${realpathSync(build.root)}/`).href
  for (const [name, url] of Object.entries(result)) {
    const ok = url.startsWith(inside) && (!name.startsWith('@outboxkit/') || url.includes('/dist/'))
    log(`  ${build.side}: ${name} -> ${url.replace(inside, `${build.root}/`)}`)
    if (!ok)
      throw new Error(
        `bench:compare: ${build.side} resolves ${name} to ${url}, outside ${build.root}'s build`,
      )
  }
}
