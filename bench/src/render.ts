import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { renderMarkdown } from './report/markdown.js'
import { renderDrainSvg, renderLatencySvg } from './report/svg.js'
import type { BenchResults } from './results.js'

/** Re-renders the markdown and SVGs of a results JSON (`tsx src/render.ts results/full.json`). */
const file = process.argv[2] ?? fileURLToPath(new URL('../results/latest.json', import.meta.url))
const results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults
const base = file.replace(/\.json$/, '')
const suffix = base.endsWith('latest') ? '' : `-${base.split('/').pop()}`
const dir = base.slice(0, base.lastIndexOf('/'))
writeFileSync(`${base}.md`, renderMarkdown(results))
if (results.drain) writeFileSync(`${dir}/drain${suffix}.svg`, renderDrainSvg(results))
if (results.latency) writeFileSync(`${dir}/latency${suffix}.svg`, renderLatencySvg(results))
console.log(`rendered ${base}.md`)
