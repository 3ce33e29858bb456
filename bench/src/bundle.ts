import { mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

/**
 * Bundles `entry` (TypeScript, `@outboxkit/*` from source) into one plain ESM file with esbuild
 * (the copy tsx already depends on), so a process can be measured without the tsx loader in it.
 * `external` packages (e.g. native addons) stay imports, resolved from `outfile`'s directory.
 */
export async function bundle(entry: string, outfile: string, external: string[] = []): Promise<string> {
  const require = createRequire(fileURLToPath(import.meta.resolve('tsx')))
  const esbuild = require('esbuild') as { build(options: Record<string, unknown>): Promise<unknown> }
  mkdirSync(fileURLToPath(new URL('.', `file://${outfile}`)), { recursive: true })
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: fileURLToPath(new URL('../../tsconfig.json', import.meta.url)),
    external: ['pg-native', '@opentelemetry/api', ...external],
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
    logLevel: 'error',
  })
  return outfile
}
