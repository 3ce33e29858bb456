// `pnpm docs:reference`: regenerates docs/reference/ from the packages' TSDoc (then formats it).
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from './markdown-files.js'
import { REFERENCE_DIR, referencePages } from './reference/pages.js'

const pages = referencePages()
const dir = join(repoRoot, REFERENCE_DIR)
mkdirSync(dir, { recursive: true })
for (const name of readdirSync(dir)) {
  if (!pages.has(`${REFERENCE_DIR}/${name}`)) rmSync(join(dir, name))
}
for (const [path, markdown] of pages) writeFileSync(join(repoRoot, path), markdown)
console.log(`${pages.size} pages in ${REFERENCE_DIR}/`)
