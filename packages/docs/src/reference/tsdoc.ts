// TSDoc text of a symbol, one line per paragraph, for Markdown tables and lists.
import type ts from 'typescript'

/** `parts` as text, `{@link X}` as `X`. */
function partsText(parts: readonly ts.SymbolDisplayPart[] | undefined): string {
  return (parts ?? [])
    .filter((p) => p.kind !== 'link')
    .map((p) => p.text)
    .join('')
    .replace(/ +([.,;:])(?=\s|$)/g, '$1')
}

/** The whole documentation comment of `symbol` (no tags). */
export function docText(symbol: ts.Symbol, checker: ts.TypeChecker): string {
  return partsText(symbol.getDocumentationComment(checker)).trim()
}

/**
 * The first paragraph of `text`, on one line; when it runs on into a list or a code block (it does
 * not end a sentence), its complete sentences only.
 */
export function summaryOf(text: string): string {
  const first = oneLine(text.split(/\n\s*\n/)[0] ?? '')
  if (/[.!?)`]$/.test(first)) return first
  const end = first.lastIndexOf('. ')
  return end < 0 ? first : first.slice(0, end + 1)
}

/** `text` on one line (newlines and runs of spaces as one space). */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

/** The text of the tag `name` (e.g. `defaultValue`) of `symbol`, when it has one. */
export function tagText(symbol: ts.Symbol, checker: ts.TypeChecker, name: string): string | undefined {
  const tag = symbol.getJsDocTags(checker).find((t) => t.name === name)
  return tag === undefined ? undefined : oneLine(partsText(tag.text))
}

/** The unit an option's name states: `...Ms` milliseconds, `...Bytes` bytes, '' otherwise. */
export function unitOf(name: string): string {
  if (/Ms$/.test(name)) return 'ms'
  if (/Bytes$/.test(name)) return 'bytes'
  return ''
}
