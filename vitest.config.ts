import { existsSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

// Tests run against each package's source, so `pnpm test` needs no build step.
const packagesDir = fileURLToPath(new URL('./packages/', import.meta.url))
// Each package's entry points by exact name: '@outboxkit/core' and its '@outboxkit/core/adapter' subpath.
const alias = readdirSync(packagesDir)
  .filter((d) => existsSync(`${packagesDir}${d}/src/index.ts`))
  .flatMap((d) => [
    { find: new RegExp(`^@outboxkit/${d}$`), replacement: `${packagesDir}${d}/src/index.ts` },
    ...(existsSync(`${packagesDir}${d}/src/adapter.ts`)
      ? [{ find: new RegExp(`^@outboxkit/${d}/adapter$`), replacement: `${packagesDir}${d}/src/adapter.ts` }]
      : []),
  ])

export default defineConfig({
  resolve: { alias },
  test: {
    // CI sets OUTBOXKIT_TEST_REPORT to also write a JSON report it summarises in one closing line.
    reporters: process.env.OUTBOXKIT_TEST_REPORT
      ? ['default', ['json', { outputFile: process.env.OUTBOXKIT_TEST_REPORT }]]
      : ['default'],
    include: ['packages/*/test/**/*.test.ts'],
    // Chooses PostgreSQL and MariaDB once (URL variable, local server, or a Docker container) and sets DATABASE_URL/MYSQL_URL.
    globalSetup: ['./packages/conformance/src/test-databases-setup.ts'],
    // Generous bounds: they only matter when something hangs, and a loaded 2-core machine can take
    // many seconds to start an embedded PGlite. Tests wait on events, never on these.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Test files share one PostgreSQL server; each file uses its own table names.
    fileParallelism: true,
    maxWorkers: 2,
  },
})
