import { formatValue } from './format-value.js'

// What outboxkit stores as JSON text (payloads, headers) and as text (topic, key, dedupKey) must
// be something every database keeps exactly: JSON that `JSON.stringify` did not silently change,
// no NUL character (PostgreSQL's text and jsonb reject it) and no lone UTF-16 surrogate (not
// Unicode at all: PostgreSQL rejects it, other databases may store something else).

function jsonReplacer(this: unknown, _key: string, value: unknown): unknown {
  switch (typeof value) {
    case 'function':
      throw new TypeError('a function is not JSON')
    case 'symbol':
      throw new TypeError('a symbol is not JSON')
    case 'bigint':
      throw new TypeError('a BigInt is not JSON (convert it to a string or number)')
    case 'number':
      if (!Number.isFinite(value))
        throw new TypeError(`${value} is not JSON (NaN and Infinity would become null)`)
      return value
    case 'undefined':
      if (Array.isArray(this))
        throw new TypeError('undefined inside an array is not JSON (it would become null)')
      return value
    case 'object':
      if (value instanceof Map || value instanceof Set) {
        throw new TypeError(`a ${value.constructor.name} is not JSON (it would become {})`)
      }
      return value
    default:
      return value
  }
}

/**
 * Strict JSON encoding for payloads: refuses what `JSON.stringify` would silently drop or change
 * (functions, symbols, NaN/Infinity, undefined in arrays, Map/Set), BigInt and cycles.
 * Returns the JSON text or throws a `TypeError` describing the first problem.
 */
export function encodeJson(value: unknown): string {
  const text = JSON.stringify(value, jsonReplacer)
  if (text === undefined) throw new TypeError(`${formatValue(value)} is not JSON`)
  return text
}

// A JSON escape preceded by an even number of backslashes (so the backslash before `u` is not
// itself escaped): `JSON.stringify` writes a NUL as \u0000 and, being well-formed, a lone
// surrogate as \ud800-\udfff (lower case); a valid pair stays two raw characters.
const ESCAPED_NUL = /(?<!\\)(?:\\\\)*\\u0000/
const ESCAPED_LONE_SURROGATE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/

/** True when JSON text made by `JSON.stringify` encodes a NUL character. O(n), one scan when there is none. */
export function jsonHasNul(json: string): boolean {
  return json.includes('\\u0000') && ESCAPED_NUL.test(json)
}

/**
 * True when JSON text made by `JSON.stringify` encodes a lone surrogate (a string cut in the
 * middle of an emoji or another character outside the Basic Multilingual Plane). O(n), one scan
 * when there is none.
 */
export function jsonHasLoneSurrogate(json: string): boolean {
  return json.includes('\\ud') && ESCAPED_LONE_SURROGATE.test(json)
}

/** True when `text` is well-formed UTF-16 (no lone surrogate): native, O(n). */
export function isWellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed()
}

/**
 * Where in `value` (walked like `JSON.stringify`, keys included) the first string with a lone
 * surrogate is, as a path from `root` (`payload.items[2].name`, or `a key of payload.tags`), and
 * the offending code unit as `\udXXX`. `undefined` when there is none. Only for error messages:
 * it walks the whole value.
 *
 * @param value - the value to search
 * @param root - the name of `value` in the path, e.g. `'payload'`
 */
export function locateLoneSurrogate(
  value: unknown,
  root: string,
): { path: string; unit: string } | undefined {
  const seen = new Set<object>()
  const unitOf = (s: string) => {
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i)
      if (c < 0xd800 || c > 0xdfff) continue
      const next = s.charCodeAt(i + 1)
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++
        continue
      }
      return `\\u${c.toString(16)}`
    }
    return '?'
  }
  const visit = (v: unknown, path: string): { path: string; unit: string } | undefined => {
    if (typeof v === 'string') return isWellFormed(v) ? undefined : { path, unit: unitOf(v) }
    if (v === null || typeof v !== 'object' || seen.has(v)) return undefined
    seen.add(v)
    const json = (v as { toJSON?: unknown }).toJSON
    if (typeof json === 'function') return visit(json.call(v), path)
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const found = visit(v[i], `${path}[${i}]`)
        if (found) return found
      }
      return undefined
    }
    for (const [k, item] of Object.entries(v)) {
      if (!isWellFormed(k)) return { path: `a key of ${path}`, unit: unitOf(k) }
      const found = visit(
        item,
        /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`,
      )
      if (found) return found
    }
    return undefined
  }
  return visit(value, root)
}

/**
 * The end of an error message about a lone surrogate found in `where`: what it is and what to do.
 *
 * @param where - the field, e.g. `'key'` or `'payload.items[2].name'`
 * @param unit - the offending code unit, e.g. `'\\ud83d'`
 */
export function loneSurrogateMessage(where: string, unit: string): string {
  return `${where} contains a lone surrogate (${unit}), half of a character such as an emoji, usually left by cutting a string in the middle of one. It is not valid Unicode: PostgreSQL refuses it (which would abort your transaction) and other databases store something else. Cut strings by code points (Array.from(text).slice(...)), or repair them with text.toWellFormed().`
}
