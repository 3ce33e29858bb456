// Reads a published package's exports and their TSDoc with the TypeScript compiler.
import { readFileSync } from 'node:fs'
import { join, sep } from 'node:path'
import ts from 'typescript'
import { repoRoot } from '../markdown-files.js'
import { rootCompilerOptions } from '../ts-check.js'
import type { DocErrorCode, DocItem, DocProperty, DocShape, PackageReference } from './model.js'
import { docText, oneLine, summaryOf, tagText, unitOf } from './tsdoc.js'

/** Interfaces and type aliases shown with their properties, as options, by name. */
const OPTIONS = /(Options|Policy)$/
/** Interfaces shown with their properties, as events, by name. */
const EVENTS = /Events$/

const printer = ts.createPrinter({ removeComments: true })

/** `node` as TypeScript prints it (members separated by `;`), on one line. */
function text(node: ts.Node | undefined): string {
  if (node === undefined) return ''
  return oneLine(printer.printNode(ts.EmitHint.Unspecified, node, node.getSourceFile())).replace(
    /; \}/g,
    ' }',
  )
}

/** A property of an options or events shape. */
function property(symbol: ts.Symbol, checker: ts.TypeChecker): DocProperty {
  const decl = symbol.declarations?.[0]
  const typeNode =
    decl && (ts.isPropertySignature(decl) || ts.isMethodSignature(decl)) ? decl.type : undefined
  return {
    name: symbol.name,
    type: typeNode ? text(typeNode) : checker.typeToString(checker.getTypeOfSymbol(symbol)),
    optional: (symbol.flags & ts.SymbolFlags.Optional) !== 0,
    defaultValue: tagText(symbol, checker, 'defaultValue'),
    unit: unitOf(symbol.name),
    doc: oneLine(docText(symbol, checker)),
  }
}

/** True when `node` is written inside `outer` (a member of that very declaration). */
function within(node: ts.Node, outer: ts.Node): boolean {
  return node.getSourceFile() === outer.getSourceFile() && node.pos >= outer.pos && node.end <= outer.end
}

/**
 * An interface or type alias with the properties written in its own declaration (those it
 * extends or intersects are on their own shapes: `alias` says which).
 */
function shape(symbol: ts.Symbol, decl: ts.Declaration, checker: ts.TypeChecker): DocShape {
  const type = checker.getDeclaredTypeOfSymbol(symbol)
  const alias = ts.isTypeAliasDeclaration(decl)
    ? text(decl.type)
    : ts.isInterfaceDeclaration(decl) && decl.heritageClauses
      ? decl.heritageClauses.map(text).join(' ')
      : undefined
  const properties = type.isUnion()
    ? []
    : checker
        .getPropertiesOfType(type)
        .filter((p) => p.declarations?.some((d) => within(d, decl)))
        .map((p) => property(p, checker))
  return { name: symbol.name, summary: summaryOf(docText(symbol, checker)), alias, properties }
}

/** The signature of a function as declared: `name(params): Return`, or `name: Type` for a const. */
function signature(symbol: ts.Symbol, decl: ts.Declaration, checker: ts.TypeChecker): string {
  if (ts.isFunctionDeclaration(decl)) {
    const generics = decl.typeParameters ? `<${decl.typeParameters.map(text).join(', ')}>` : ''
    const params = decl.parameters.map(text).join(', ')
    return `${symbol.name}${generics}(${params})${decl.type ? `: ${text(decl.type)}` : ''}`
  }
  if (ts.isVariableDeclaration(decl) && decl.type) return `${symbol.name}: ${text(decl.type)}`
  return `${symbol.name}: ${checker.typeToString(checker.getTypeOfSymbol(symbol))}`
}

/** The error codes of `OutboxErrorCode`: its union members, with the meaning its TSDoc lists. */
function errorCodes(symbol: ts.Symbol, checker: ts.TypeChecker): DocErrorCode[] {
  const doc = docText(symbol, checker)
  const type = checker.getDeclaredTypeOfSymbol(symbol)
  const codes = type.isUnion() ? type.types.filter((t) => t.isStringLiteral()).map((t) => t.value) : []
  return codes.map((code) => {
    const m = new RegExp(`- \`${code}\`: ([\\s\\S]*?)(?=\\n- |$)`).exec(doc)
    return { code, meaning: m ? oneLine(m[1]!) : '' }
  })
}

interface Sections {
  functions: DocItem[]
  classes: DocItem[]
  constants: DocItem[]
  options: DocShape[]
  events: DocShape[]
  types: DocItem[]
  errorCodes: DocErrorCode[]
}

/** Files the exported symbol `symbol` into `into`. */
function file(symbol: ts.Symbol, checker: ts.TypeChecker, srcDir: string, into: Sections): void {
  const decl = symbol.declarations?.find((d) => d.getSourceFile().fileName.startsWith(srcDir))
  if (!decl) return
  const summary = summaryOf(docText(symbol, checker))
  const admin = decl.getSourceFile().fileName.includes(`${sep}admin${sep}`)
  const item = (sig: string): DocItem => ({ name: symbol.name, signature: sig, summary, admin })
  if (symbol.name === 'OutboxErrorCode') into.errorCodes.push(...errorCodes(symbol, checker))
  if (ts.isInterfaceDeclaration(decl) || ts.isTypeAliasDeclaration(decl)) {
    if (OPTIONS.test(symbol.name)) into.options.push(shape(symbol, decl, checker))
    else if (EVENTS.test(symbol.name)) into.events.push(shape(symbol, decl, checker))
    else into.types.push(item(''))
  } else if (ts.isClassDeclaration(decl)) {
    into.classes.push(item(''))
  } else if (ts.isFunctionDeclaration(decl)) {
    into.functions.push(item(signature(symbol, decl, checker)))
  } else if (ts.isVariableDeclaration(decl)) {
    const isFn = checker.getTypeOfSymbol(symbol).getCallSignatures().length > 0
    ;(isFn ? into.functions : into.constants).push(item(signature(symbol, decl, checker)))
  }
}

/** Alphabetical order, for a stable page. */
function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

/** The published packages (not private) with a src/index.ts, by folder name. */
export function publishedPackages(): string[] {
  return ts.sys
    .getDirectories(join(repoRoot, 'packages'))
    .filter((dir) => ts.sys.fileExists(join(repoRoot, 'packages', dir, 'src', 'index.ts')))
    .filter(
      (dir) =>
        JSON.parse(readFileSync(join(repoRoot, 'packages', dir, 'package.json'), 'utf8')).private !== true,
    )
    .sort()
}

/** The reference of every published package, from one compilation of their sources. */
export function extractReferences(): PackageReference[] {
  const dirs = publishedPackages()
  const entries = dirs.map((dir) => join(repoRoot, 'packages', dir, 'src', 'index.ts'))
  const program = ts.createProgram(entries, rootCompilerOptions())
  const checker = program.getTypeChecker()
  return dirs.map((dir, i) => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'packages', dir, 'package.json'), 'utf8'))
    const source = program.getSourceFile(entries[i]!)
    const moduleSymbol = source && checker.getSymbolAtLocation(source)
    if (!moduleSymbol) throw new Error(`[outboxkit] [docs] packages/${dir}/src/index.ts could not be read`)
    const sections: Sections = {
      functions: [],
      classes: [],
      constants: [],
      options: [],
      events: [],
      types: [],
      errorCodes: [],
    }
    const srcDir = join(repoRoot, 'packages', dir, 'src') + sep
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
      file(symbol, checker, srcDir, sections)
    }
    for (const list of [sections.functions, sections.classes, sections.constants, sections.types]) {
      list.sort(byName)
    }
    sections.options.sort(byName)
    sections.events.sort(byName)
    return { dir, name: pkg.name as string, description: (pkg.description as string) ?? '', ...sections }
  })
}
