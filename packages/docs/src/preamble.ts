// A page's preamble applied to one block: the declarations the block makes itself win.
import ts from 'typescript'

/** The names a binding (identifier or destructuring pattern) declares. */
function bindingNames(name: ts.BindingName): string[] {
  if (ts.isIdentifier(name)) return [name.text]
  return name.elements.flatMap((e) => (ts.isOmittedExpression(e) ? [] : bindingNames(e.name)))
}

/** The names a top-level statement declares. */
function statementNames(statement: ts.Statement): string[] {
  if (ts.isImportDeclaration(statement)) {
    const clause = statement.importClause
    if (!clause) return []
    const names = clause.name ? [clause.name.text] : []
    const bindings = clause.namedBindings
    if (bindings && ts.isNamespaceImport(bindings)) names.push(bindings.name.text)
    if (bindings && ts.isNamedImports(bindings)) names.push(...bindings.elements.map((e) => e.name.text))
    return names
  }
  if (ts.isVariableStatement(statement)) {
    return statement.declarationList.declarations.flatMap((d) => bindingNames(d.name))
  }
  const named = statement as ts.Statement & { name?: ts.Node }
  return named.name && ts.isIdentifier(named.name) ? [named.name.text] : []
}

/** The top-level names `code` declares. */
export function declaredNames(code: string): Set<string> {
  const file = ts.createSourceFile('block.mts', code, ts.ScriptTarget.Latest, false)
  return new Set(file.statements.flatMap(statementNames))
}

/** `statement` with only the named imports `own` does not declare, or undefined when none is left. */
function keptImport(statement: ts.ImportDeclaration, file: ts.SourceFile, own: ReadonlySet<string>) {
  const clause = statement.importClause
  const bindings = clause?.namedBindings
  if (!clause || clause.name || !bindings || !ts.isNamedImports(bindings)) return undefined
  const kept = bindings.elements.filter((e) => !own.has(e.name.text)).map((e) => e.getText(file))
  if (kept.length === 0) return undefined
  const typeOnly = clause.isTypeOnly ? 'type ' : ''
  return `import ${typeOnly}{ ${kept.join(', ')} } from ${statement.moduleSpecifier.getText(file)}`
}

/**
 * `preamble` without the statements that declare a name the block declares itself (an import
 * keeps its other names), so a page's context never collides with a block that spells it out.
 * Removed text is blanked line for line, so line numbers stay.
 */
export function preambleFor(preamble: string, own: ReadonlySet<string>): string {
  const file = ts.createSourceFile('preamble.mts', preamble, ts.ScriptTarget.Latest, true)
  let text = preamble
  for (const statement of [...file.statements].reverse()) {
    const names = statementNames(statement)
    if (!names.some((n) => own.has(n))) continue
    const start = statement.getStart(file)
    const original = preamble.slice(start, statement.end)
    const kept = ts.isImportDeclaration(statement) ? keptImport(statement, file, own) : undefined
    const lines = original.split('\n').length - 1
    const replacement = kept
      ? `${kept.padEnd(original.length - lines)}${'\n'.repeat(lines)}`
      : original.replace(/[^\n]/g, ' ')
    text = text.slice(0, start) + replacement + text.slice(statement.end)
  }
  return text
}
