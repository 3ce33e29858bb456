import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { PrismaTransactionClient } from '@outboxkit/prisma'
import type { PrismaPg } from '@prisma/adapter-pg'

const exampleDir = fileURLToPath(new URL('../', import.meta.url))
const schemaPath = join(exampleDir, 'prisma', 'schema.prisma')
const clientPath = join(exampleDir, 'generated', 'prisma', 'client.ts')
const stampPath = join(exampleDir, 'generated', 'schema.sha256')

/** An order row, as the generated client returns it. */
export interface Order {
  id: string
  customer: string
  totalCents: number
  createdAt: Date
}

/** The interactive-transaction client (`Prisma.TransactionClient`) of the generated client, as used here. */
export interface OrderTransaction extends PrismaTransactionClient {
  order: { create(args: { data: { customer: string; totalCents: number } }): Promise<Order> }
  /** Prisma 7.5+: a nested transaction, run as a savepoint. */
  $transaction<T>(fn: (tx: OrderTransaction) => Promise<T>): Promise<T>
}

/** The generated `PrismaClient`, as used here. */
export interface OrderPrismaClient {
  $transaction<T>(fn: (tx: OrderTransaction) => Promise<T>): Promise<T>
  $executeRawUnsafe(sql: string, ...values: unknown[]): Promise<number>
  $disconnect(): Promise<void>
  order: { findUnique(args: { where: { id: string } }): Promise<Order | null> }
}

/**
 * Runs `prisma generate` for prisma/schema.prisma when generated/ is missing or older than the
 * schema, then loads the generated client. In an app you would run `npx prisma generate` in your
 * build and write `import { PrismaClient } from './generated/prisma/client.js'`; the example loads
 * it at run time so that it starts (and type-checks) from a fresh clone.
 */
export async function loadPrismaClient(): Promise<new (options: { adapter: PrismaPg }) => OrderPrismaClient> {
  const schemaHash = createHash('sha256').update(readFileSync(schemaPath)).digest('hex')
  const upToDate =
    existsSync(clientPath) && existsSync(stampPath) && readFileSync(stampPath, 'utf8') === schemaHash
  if (!upToDate) {
    const require = createRequire(import.meta.url)
    const cli = join(dirname(require.resolve('prisma/package.json')), 'build', 'index.js')
    console.log('generating the Prisma client (npx prisma generate)...')
    execFileSync(process.execPath, [cli, 'generate', '--schema', schemaPath], {
      cwd: exampleDir,
      stdio: ['ignore', 'ignore', 'inherit'],
      // `prisma generate` needs no schema engine; naming one stops the CLI from downloading it,
      // which fails on machines without network access.
      env: {
        ...process.env,
        PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? '/bin/true',
      },
    })
    writeFileSync(stampPath, schemaHash)
  }
  const generated = await import(pathToFileURL(clientPath).href)
  return generated.PrismaClient
}
