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
import { blockedKeyRowFrom, deadRowFrom, searchAsId, statsRowFrom } from '../../protocol/backend-rows.js'
import { type PostgresRun, rowsAffected } from './run.js'
import { postgresStatements } from './statements.js'

/** The admin writes (purge, redrive, discard): one statement each, returning how many rows it changed. */
export function postgresAdminWrites(
  run: PostgresRun,
): Required<Pick<OutboxBackend, 'purge' | 'redrive' | 'discard'>> {
  return {
    async purge(req: PurgeRequest): Promise<number> {
      const sql = postgresStatements(req.table)
      const rows = await run(
        'purge',
        `WITH d AS (${sql.purge} RETURNING 1) SELECT count(*)::int AS n FROM d`,
        [req.states, req.olderThanMs],
      )
      return rowsAffected(rows)
    },
    async redrive(req: RedriveRequest): Promise<number> {
      const sql = postgresStatements(req.table)
      const rows = await run(
        'redrive',
        `WITH d AS (${sql.redrive} RETURNING 1) SELECT count(*)::int AS n FROM d`,
        [req.ids ?? null, req.topics ?? null],
      )
      return rowsAffected(rows)
    },
    async discard(req: DiscardRequest): Promise<number> {
      const sql = postgresStatements(req.table)
      const rows = await run(
        'discard',
        `WITH d AS (${sql.discard} RETURNING 1) SELECT count(*)::int AS n FROM d`,
        [req.ids ?? null, req.topics ?? null],
      )
      return rowsAffected(rows)
    },
  }
}

/** The admin reads (stats, dead letters, blocked keys): one read-only statement each. */
export function postgresListings(
  run: PostgresRun,
): Required<Pick<OutboxBackend, 'stats' | 'listDead' | 'countDead' | 'blockedKeys'>> {
  return {
    async stats(req: StatsRequest): Promise<StatsRow[]> {
      const sql = postgresStatements(req.table)
      const states = req.includeDelivered
        ? ['pending', 'processing', 'dead', 'delivered']
        : ['pending', 'processing', 'dead']
      const rows = await run('stats', sql.stats, [states], 'outboxkit_stats')
      return rows.map(statsRowFrom)
    },
    async listDead(req: ListDeadRequest): Promise<DeadRow[]> {
      const sql = postgresStatements(req.table)
      const rows = await run('listing dead messages', sql.listDead, [
        req.topics ?? null,
        req.limit,
        req.after?.deadAtMs ?? null,
        req.after?.id ?? null,
        req.search ?? null,
        searchAsId(req.search),
      ])
      return rows.map(deadRowFrom)
    },
    async countDead(req: CountDeadRequest): Promise<number> {
      const sql = postgresStatements(req.table)
      const rows = await run('counting dead messages', sql.countDead, [
        req.topics ?? null,
        req.cap,
        req.search ?? null,
        searchAsId(req.search),
      ])
      return Number(rows[0]?.n ?? 0)
    },
    async blockedKeys(req: BlockedKeysRequest): Promise<BlockedKeyRow[]> {
      const sql = postgresStatements(req.table)
      const rows = await run('listing blocked keys', sql.blockedKeys, [
        req.continueAfterDead,
        req.topics ?? null,
        req.afterKey ?? null,
        req.limit,
        req.includeRetrying,
      ])
      return rows.map(blockedKeyRowFrom)
    },
  }
}
