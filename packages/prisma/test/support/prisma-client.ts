import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const packageDir = fileURLToPath(new URL('../../', import.meta.url))
const generatedDir = join(packageDir, 'test', 'generated')
const require = createRequire(import.meta.url)

/** A datasource provider the tests generate a client for. */
export type TestProvider = 'postgresql' | 'mysql' | 'sqlite'

/** The model file the package ships for `provider`: `schema/outbox.prisma`, `schema/outbox.<provider>.prisma`. */
export function shippedModelPathFor(provider: TestProvider): string {
  return join(packageDir, 'schema', provider === 'postgresql' ? 'outbox.prisma' : `outbox.${provider}.prisma`)
}
/** The SQL file the package ships for `provider`: `schema/outbox.sql`, `schema/outbox.<provider>.sql`. */
export function shippedSqlPathFor(provider: TestProvider): string {
  return join(packageDir, 'schema', provider === 'postgresql' ? 'outbox.sql' : `outbox.${provider}.sql`)
}
/** The model file the package ships, used as is: the tests generate their client from it. */
export const shippedModelPath = shippedModelPathFor('postgresql')
/** The SQL file the package ships. */
export const shippedSqlPath = shippedSqlPathFor('postgresql')

/** The schema the tests generate their client from: the shipped outbox model plus a business model. */
export function testSchema(provider: TestProvider = 'postgresql'): string {
  return `generator client {
  provider     = "prisma-client"
  output       = "./prisma"
  moduleFormat = "esm"
}

datasource db {
  provider = "${provider}"
}

${readFileSync(shippedModelPathFor(provider), 'utf8')}
model Widget {
  id   Int    @id @default(autoincrement())
  name String

  @@map("widget")
}
`
}

/**
 * Generates the Prisma Client for {@link testSchema} of `provider` into
 * test/generated/<provider>-<hash>/ (one folder per provider, gitignored) unless it is already
 * there. Nothing is generated at install time (install scripts are off), so a clean clone gets its
 * client here. Safe when two test files race: each generates into a temporary folder and the first
 * rename wins. Returns the path of the generated `client.ts`.
 */
export function generatePrismaClient(provider: TestProvider = 'postgresql'): string {
  const schema = testSchema(provider)
  const versions = [require('prisma/package.json').version, require('@prisma/client/package.json').version]
  const hash = createHash('sha256').update(schema).update(versions.join()).digest('hex').slice(0, 12)
  const target = join(generatedDir, `${provider}-${hash}`)
  const client = join(target, 'prisma', 'client.ts')
  if (existsSync(client)) return client
  mkdirSync(generatedDir, { recursive: true })
  const tmp = mkdtempSync(join(generatedDir, '.tmp-'))
  try {
    writeFileSync(join(tmp, 'schema.prisma'), schema)
    const cli = join(dirname(require.resolve('prisma/package.json')), 'build', 'index.js')
    execFileSync(process.execPath, [cli, 'generate', '--schema', join(tmp, 'schema.prisma')], {
      cwd: tmp,
      stdio: 'pipe',
      env: {
        ...process.env,
        // `prisma generate` needs no schema engine, but the CLI downloads one unless this names a
        // file; machines without network access (CI here) would fail on that download.
        PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? '/bin/true',
        PRISMA_HIDE_UPDATE_MESSAGE: '1',
        CHECKPOINT_DISABLE: '1',
      },
    })
    try {
      renameSync(tmp, target)
    } catch (err) {
      if (!existsSync(client)) throw err // anything but "another worker got there first"
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
  return client
}

/** The slice of a generated PrismaClient the tests use (the real client is generated at run time). */
export interface TestPrismaClient {
  $transaction(fn: (tx: any) => Promise<any>, options?: { timeout?: number; maxWait?: number }): Promise<any>
  $transaction(batch: unknown[]): Promise<unknown[]>
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>
  $extends(extension: object): any
  $disconnect(): Promise<void>
  widget: any
  outboxMessage: any
}

/** The generated module of `provider`, loaded after {@link generatePrismaClient}. */
export async function loadPrismaClient(provider: TestProvider = 'postgresql'): Promise<{
  PrismaClient: new (options: { adapter: unknown }) => TestPrismaClient
}> {
  return import(pathToFileURL(generatePrismaClient(provider)).href)
}
