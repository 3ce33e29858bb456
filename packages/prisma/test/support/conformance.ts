import {
  type Inspector,
  type PublishContext,
  type RefusedHandle,
  runPublishConformance,
} from '@outboxkit/conformance'
import {
  inboxHandler,
  type PrismaTransactionClient,
  processOnce,
  publish,
  publishMany,
} from '@outboxkit/prisma'
import type { TestPrismaClient } from './prisma-client.js'

/** What a provider's conformance file opens: its client, the relay's backend, a raw-SQL inspector. */
export interface PrismaDatabase extends Pick<PublishContext<PrismaTransactionClient>, 'dialect' | 'backend'> {
  prisma: TestPrismaClient
  inspector: Inspector
  /** `$transaction`'s `maxWait`: how long a transaction may wait for its connection. Default 10 s. */
  maxWait?: number
  /** The handles of this provider that are not a transaction client (driver objects, null...). */
  otherHandles: RefusedHandle[]
  /** Closes what the file opened besides the client, the inspector and the backend. */
  cleanup?(): unknown
}

/**
 * Runs the publish conformance suite on a Prisma client of one provider: interactive
 * `$transaction`s, a nested `$transaction` on the tx client as the savepoint (Prisma 7.5+), and the
 * root and `$extends()` clients among the refused handles.
 */
export function runPrismaConformance(label: string | undefined, open: () => Promise<PrismaDatabase>): void {
  runPublishConformance<PrismaTransactionClient>({
    name: 'prisma',
    ...(label ? { label } : {}),
    publish,
    publishMany,
    processOnce,
    async setup() {
      const { prisma, inspector, backend, maxWait = 10_000, otherHandles, cleanup, ...db } = await open()
      return {
        ...db,
        backend,
        inspect: (text, params) => inspector.query(text, params),
        transaction: (fn) => prisma.$transaction(fn, { maxWait, timeout: 20_000 }),
        inboxHandler: (inbox, fn) => inboxHandler(inbox, prisma as never, fn as never),
        savepoint: (tx, fn) => (tx as unknown as NestingTx).$transaction(fn),
        refusedHandles: async () => [
          { label: 'the root PrismaClient', handle: prisma },
          { label: 'a $extends() PrismaClient', handle: prisma.$extends({ client: { $hello: () => 'hi' } }) },
          ...otherHandles,
          {
            label: 'a plain object with $queryRawUnsafe',
            handle: { $queryRawUnsafe: () => Promise.resolve([]) },
          },
        ],
        async teardown() {
          await prisma.$disconnect()
          await inspector.close()
          await backend.close()
          await cleanup?.()
        },
      }
    },
  })
}

interface NestingTx {
  $transaction<T>(fn: (tx: PrismaTransactionClient) => Promise<T>): Promise<T>
}
