import type {
  BlockedKeyRow,
  BlockedKeysRequest,
  CountDeadRequest,
  DeadRow,
  DiscardRequest,
  ListDeadRequest,
  OutboxBackend,
  PurgeRequest,
  RedriveRequest,
  StatsRequest,
  StatsRow,
} from '../../protocol/backend.js'
import { blockedKeyRowFrom, deadRowFrom, num, statsRowFrom } from '../../protocol/backend-rows.js'
import { type MysqlRunner, microseconds } from './runner.js'
import { mysqlStatements } from './statements.js'

// The admin side of the MySQL backend (purge, redrive, discard, stats, dead letters, blocked
// keys), as postgres/admin-backend.ts is PostgreSQL's.

/** The admin writes (purge, redrive, discard): one statement each in a transaction of its own. */
export function mysqlAdminWrites(
  db: MysqlRunner,
): Required<Pick<OutboxBackend, 'purge' | 'redrive' | 'discard'>> {
  return {
    async purge(req: PurgeRequest): Promise<number> {
      if (req.states.length === 0) return 0
      const sql = mysqlStatements(req.table)
      const statement = sql.purge(req.states.length)
      const params = [...req.states, microseconds(req.olderThanMs)]
      return db.write('purge', statement, params)
    },
    async redrive(req: RedriveRequest): Promise<number> {
      const sql = mysqlStatements(req.table)
      return db.write('redrive', sql.redrive(req.ids?.length, req.topics?.length), [
        ...(req.ids ?? []),
        ...(req.topics ?? []),
      ])
    },
    async discard(req: DiscardRequest): Promise<number> {
      const sql = mysqlStatements(req.table)
      return db.write('discard', sql.discard(req.ids?.length, req.topics?.length), [
        ...(req.ids ?? []),
        ...(req.topics ?? []),
      ])
    },
  }
}

/** The search text of a dead-letter listing, once per place the statement looks. */
const searchParams = (search: string | undefined) =>
  search === undefined ? [] : [search, search, search, search]

/** The admin reads (stats, dead letters, blocked keys): one autocommit statement each. */
export function mysqlListings(
  db: MysqlRunner,
): Required<Pick<OutboxBackend, 'stats' | 'listDead' | 'countDead' | 'blockedKeys'>> {
  return {
    async stats(req: StatsRequest): Promise<StatsRow[]> {
      const sql = mysqlStatements(req.table)
      const states = req.includeDelivered
        ? ['pending', 'processing', 'dead', 'delivered']
        : ['pending', 'processing', 'dead']
      const { rows } = await db.run('stats', sql.stats(states.length), states)
      return rows.map(statsRowFrom)
    },
    async listDead(req: ListDeadRequest): Promise<DeadRow[]> {
      const sql = mysqlStatements(req.table)
      const { rows } = await db.run(
        'listing dead messages',
        sql.listDead(
          req.topics?.length,
          req.after !== undefined,
          Math.max(1, Math.floor(req.limit)),
          req.search !== undefined,
        ),
        [
          ...(req.topics ?? []),
          ...searchParams(req.search),
          ...(req.after ? [req.after.deadAtMs, req.after.deadAtMs, req.after.id] : []),
        ],
      )
      return rows.map(deadRowFrom)
    },
    async countDead(req: CountDeadRequest): Promise<number> {
      const sql = mysqlStatements(req.table)
      const { rows } = await db.run(
        'counting dead messages',
        sql.countDead(req.topics?.length, req.search !== undefined, Math.max(1, Math.floor(req.cap))),
        [...(req.topics ?? []), ...searchParams(req.search)],
      )
      return num(rows[0]?.n ?? 0)
    },
    async blockedKeys(req: BlockedKeysRequest): Promise<BlockedKeyRow[]> {
      const sql = mysqlStatements(req.table)
      const { rows } = await db.run(
        'listing blocked keys',
        sql.blockedKeys({
          continueAfterDead: req.continueAfterDead.length,
          topics: req.topics?.length,
          afterKey: req.afterKey !== undefined,
          includeRetrying: req.includeRetrying,
          limit: Math.max(1, Math.floor(req.limit)),
        }),
        [
          ...req.continueAfterDead,
          ...(req.afterKey !== undefined ? [req.afterKey] : []),
          ...(req.topics ?? []),
        ],
      )
      return rows.map(blockedKeyRowFrom)
    },
  }
}
