// `pnpm docs:sql`: rewrites the SQL regions of the pages in SQL_PAGES from the statement builders.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from './markdown-files.js'
import { renderSqlRegions, SQL_PAGES } from './sql-regions.js'

for (const page of Object.keys(SQL_PAGES)) {
  const path = join(repoRoot, page)
  const before = readFileSync(path, 'utf8')
  const after = renderSqlRegions(before)
  if (after !== before) writeFileSync(path, after)
  console.log(`${page}: ${after === before ? 'up to date' : 'rewritten'}`)
}
