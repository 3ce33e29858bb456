// Type-checks the ```ts blocks of the documentation with the TypeScript compiler, against the
// workspace packages' sources (the root tsconfig's paths and options: strict), each block as its
// own virtual ES module next to the repository's files.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'
import { repoRoot } from './markdown-files.js'
import { declaredNames, preambleFor } from './preamble.js'
import type { TsBlock } from './ts-blocks.js'

/** A compiler error in a block, as `page:line: message`. */
export type BlockProblem = string

const VIRTUAL_DIR = join(repoRoot, 'packages', 'docs', '.blocks')

/** The compiler options of the root tsconfig.json (strict, NodeNext, the workspace's paths). */
export function rootCompilerOptions(): ts.CompilerOptions {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(repoRoot, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'))
      },
    },
  )
  if (!parsed) throw new Error('tsconfig.json could not be read')
  return { ...parsed.options, noEmit: true, declaration: false, declarationMap: false, sourceMap: false }
}

/**
 * Directories whose node_modules a block's imports may also come from: every package's and
 * example's, as the pages show code that imports the libraries those packages are built on.
 */
function fallbackDirs(): string[] {
  const dirs: string[] = []
  for (const parent of ['packages', 'examples']) {
    for (const name of ts.sys.getDirectories(join(repoRoot, parent)).sort()) {
      dirs.push(join(repoRoot, parent, name))
    }
  }
  return dirs
}

interface VirtualFile {
  readonly block: TsBlock
  readonly text: string
  readonly preambleLines: number
}

/**
 * The virtual module of `block`: its page's preamble (less what the block and its context
 * declare themselves), its context, then its code.
 */
function virtualFile(block: TsBlock): VirtualFile {
  const own = new Set([...declaredNames(block.code), ...declaredNames(block.context)])
  const preamble = [preambleFor(block.preamble, own), block.context].filter(Boolean).join('\n')
  const head = preamble === '' ? '' : `${preamble}\n`
  return { block, text: `${head}${block.code}\nexport {}\n`, preambleLines: head.split('\n').length - 1 }
}

/** Where a diagnostic of a virtual file is on its page. */
function locate(file: VirtualFile, diagnostic: ts.Diagnostic): string {
  const { block } = file
  if (diagnostic.file === undefined || diagnostic.start === undefined) return `${block.page}:${block.line}`
  const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start)
  return line < file.preambleLines
    ? `${block.page}:${block.line - 1} (in the page's ts-preamble)`
    : `${block.page}:${block.line + line - file.preambleLines}`
}

/** The virtual file of the stand-in module `specifier` of the block `blockFile`. */
function moduleFile(blockFile: string, specifier: string): string {
  return `${blockFile.replace(/\.mts$/, '')}.module.${specifier.replace(/[^\w-]+/g, '_')}.mts`
}

/** True when `r` found the module with its types. */
function typed(r: ts.ResolvedModuleWithFailedLookupLocations): boolean {
  const ext = r.resolvedModule?.extension
  return ext !== undefined && ext !== ts.Extension.Js && ext !== ts.Extension.Mjs && ext !== ts.Extension.Cjs
}

/** A compiler host that serves the virtual files and resolves their imports from the workspace too. */
function hostFor(options: ts.CompilerOptions, files: Map<string, VirtualFile>): ts.CompilerHost {
  const texts = new Map<string, string>()
  for (const [name, file] of files) {
    texts.set(name, file.text)
    for (const [specifier, text] of file.block.modules) texts.set(moduleFile(name, specifier), text)
  }
  const host = ts.createCompilerHost(options, true)
  const { getSourceFile, fileExists, readFile } = host
  host.fileExists = (f) => texts.has(f) || fileExists.call(host, f)
  host.readFile = (f) => texts.get(f) ?? readFile.call(host, f)
  host.getSourceFile = (f, lang, ...rest) => {
    const v = texts.get(f)
    return v !== undefined
      ? ts.createSourceFile(f, v, lang, true)
      : getSourceFile.call(host, f, lang, ...rest)
  }
  const fallbacks = fallbackDirs()
  host.resolveModuleNameLiterals = (literals, containingFile, redirected, opts, sourceFile) =>
    literals.map((literal) => {
      const block = files.get(containingFile)?.block
      if (block?.modules.has(literal.text)) {
        const resolvedFileName = moduleFile(containingFile, literal.text)
        return { resolvedModule: { resolvedFileName, extension: ts.Extension.Mts } }
      }
      const mode = ts.getModeForUsageLocation(sourceFile, literal, opts)
      const first = ts.resolveModuleName(
        literal.text,
        containingFile,
        opts,
        host,
        undefined,
        redirected,
        mode,
      )
      if (typed(first) || block === undefined || literal.text.startsWith('.')) return first
      // Found nowhere, or found without types (its @types package is a dependency of a package):
      // the block imports it as the package that depends on it would.
      for (const dir of fallbacks) {
        const r = ts.resolveModuleName(
          literal.text,
          join(dir, 'index.mts'),
          opts,
          host,
          undefined,
          undefined,
          mode,
        )
        if (typed(r)) return r
      }
      return first
    })
  return host
}

/**
 * The compiler errors of `blocks` (ignored blocks are skipped), each as `page:line: message`;
 * none when every block type-checks.
 */
export function checkTsBlocks(blocks: readonly TsBlock[]): BlockProblem[] {
  const options = rootCompilerOptions()
  const files = new Map<string, VirtualFile>()
  blocks.forEach((block, i) => {
    if (block.ignored) return
    const name = `${block.page.replace(/[^\w.-]+/g, '_')}.${block.line}.${i}.mts`
    files.set(join(VIRTUAL_DIR, name), virtualFile(block))
  })
  const program = ts.createProgram([...files.keys()], options, hostFor(options, files))
  const problems: BlockProblem[] = []
  for (const [name, file] of files) {
    const sourceFile = program.getSourceFile(name)
    const diagnostics = [
      ...program.getSyntacticDiagnostics(sourceFile),
      ...program.getSemanticDiagnostics(sourceFile),
    ]
    for (const d of diagnostics) {
      problems.push(`${locate(file, d)}: TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`)
    }
  }
  return problems
}

/** The text of a file of the repository (path relative to its root). */
export function readRepoFile(path: string): string {
  return readFileSync(join(repoRoot, path), 'utf8')
}
