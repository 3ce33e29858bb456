/** A short description of a value for error messages: its type or class name. */
export function formatValue(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (typeof value === 'object') {
    const ctor = (value as object).constructor?.name
    return ctor && ctor !== 'Object' ? `a ${ctor} instance` : 'a plain object'
  }
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`
  return typeof value
}
