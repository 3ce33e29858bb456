// Module resolution hooks of hide-packages.mjs (they run on Node's loader thread).
let hidden = []

/** @param {{ hidden: string[] }} data */
export function initialize(data) {
  hidden = data.hidden
}

/** The package a bare specifier names: 'mysql2/promise' -> 'mysql2', '@a/b/c' -> '@a/b'. */
function packageOf(specifier) {
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

export async function resolve(specifier, context, next) {
  const name = packageOf(specifier)
  if (hidden.includes(name)) {
    const error = new Error(`Cannot find package '${name}' imported from ${context.parentURL}`)
    error.code = 'ERR_MODULE_NOT_FOUND'
    throw error
  }
  return next(specifier, context)
}
