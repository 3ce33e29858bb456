import { mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, extname } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Bundles `entry` (TypeScript, `@outboxkit/*` from source) into one plain ESM file with esbuild
 * (the copy tsx already depends on), so a process can be measured without the tsx loader in it.
 * `external` packages (e.g. native addons, or `@outboxkit/*` to run a build's own packages) stay
 * imports, resolved from `outfile`'s directory. With `splitting`, modules reached only by dynamic
 * `import()` go to chunk files next to `outfile` and load only when imported.
 */
export async function bundle(
  entry: string,
  outfile: string,
  external: string[] = [],
  options: { splitting?: boolean } = {},
): Promise<string> {
  const require = createRequire(fileURLToPath(import.meta.resolve('tsx')))
  const esbuild = require('esbuild') as { build(options: Record<string, unknown>): Promise<unknown> }
  mkdirSync(dirname(outfile), { recursive: true })
  const output = options.splitting
    ? {
        outdir: dirname(outfile),
        splitting: true,
        entryNames: basename(outfile, extname(outfile)),
        chunkNames: `${basename(outfile, extname(outfile))}-chunk-[hash]`,
        outExtension: { '.js': extname(outfile) || '.js' },
      }
    : { outfile }
  await esbuild.build({
    entryPoints: [entry],
    ...output,
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
