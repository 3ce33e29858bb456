// The generated reference pages, by path relative to the repository root.
import { extractReferences } from './extract.js'
import { renderIndex, renderReference } from './render.js'

/** The directory of the reference pages, relative to the repository root. */
export const REFERENCE_DIR = 'docs/reference'

/** Every reference page (and the index) as `path -> Markdown`. */
export function referencePages(): Map<string, string> {
  const refs = extractReferences()
  const pages = new Map<string, string>([[`${REFERENCE_DIR}/README.md`, renderIndex(refs)]])
  for (const ref of refs) pages.set(`${REFERENCE_DIR}/${ref.dir}.md`, renderReference(ref))
  return pages
}
