// The Markdown files of the documentation, shared by the docs checks.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository's root directory (absolute, with a trailing separator). */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))

/**
 * The Markdown files of the documentation: README.md, every page under docs/, and the README of
 * each package and (with `examples: true`) each example. Absolute paths, in a stable order.
 */
export function markdownFiles(options: { examples?: boolean } = {}): string[] {
  const files = [join(repoRoot, 'README.md')]
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (name.endsWith('.md')) files.push(path)
    }
  }
  walk(join(repoRoot, 'docs'))
  for (const parent of options.examples === true ? ['packages', 'examples'] : ['packages']) {
    for (const name of readdirSync(join(repoRoot, parent)).sort()) {
      const readme = join(repoRoot, parent, name, 'README.md')
      if (existsSync(readme)) files.push(readme)
    }
  }
  return files
}
