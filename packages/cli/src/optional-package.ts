/**
 * An optional package the chosen database needs is not installed: exit code 2 (the setup is
 * wrong, not the database), with the command that installs it.
 */
export class MissingPackageError extends Error {
  /** The packages the database needs, e.g. `['@outboxkit/mysql', 'mysql2']`. */
  readonly packages: readonly string[]
  /** The one that failed to load, e.g. `'mysql2'`. */
  readonly missing: string

  /**
   * @param database - the database as people call it, e.g. `'MySQL/MariaDB'`
   * @param packages - every package it needs
   * @param missing - the package Node could not find
   * @param cause - Node's error
   */
  constructor(database: string, packages: readonly string[], missing: string, cause: unknown) {
    super(
      `DATABASE_URL is a ${database} URL, which needs the optional packages ${packages.join(' and ')}, and ${missing} is not installed. Install them beside @outboxkit/cli: npm install ${packages.join(' ')}`,
      { cause },
    )
    this.name = 'MissingPackageError'
    this.packages = packages
    this.missing = missing
  }
}

/** The package name Node reports missing (`ERR_MODULE_NOT_FOUND`, or CommonJS `MODULE_NOT_FOUND`), if that is the error. */
function missingPackageName(error: unknown): string | undefined {
  const err = error as { code?: unknown; message?: unknown } | null | undefined
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' && err?.code !== 'MODULE_NOT_FOUND') return undefined
  const text = typeof err.message === 'string' ? err.message : ''
  const name = /Cannot find (?:package|module) '([^']+)'/.exec(text)?.[1]
  if (name === undefined) return undefined
  // 'mysql2/promise' -> 'mysql2', '@outboxkit/mysql/x' -> '@outboxkit/mysql'
  const parts = name.split('/')
  return name.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

/**
 * Loads an optional peer dependency with `load` (a dynamic `import()`), turning "not installed"
 * of any of `packages` into a {@link MissingPackageError}. Any other failure is rethrown as is.
 */
export async function importOptional<T>(
  load: () => Promise<T>,
  database: string,
  packages: readonly string[],
): Promise<T> {
  try {
    return await load()
  } catch (error) {
    const missing = missingPackageName(error)
    if (missing !== undefined && packages.includes(missing)) {
      throw new MissingPackageError(database, packages, missing, error)
    }
    throw error
  }
}
