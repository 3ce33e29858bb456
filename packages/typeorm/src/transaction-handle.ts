import { OutboxError } from '@outboxkit/core'
import { formatValue } from '@outboxkit/core/adapter'
import type { EntityManager, QueryRunner } from 'typeorm'
import { type OutboxDialect, type TypeormDataSourceLike, typeormDialect } from './dialect.js'

/**
 * What `publish` accepts: the `EntityManager` of `dataSource.transaction(async (manager) => ...)`
 * (or of a nested `manager.transaction(...)`), or a `QueryRunner` after `startTransaction()`.
 */
export type TypeormTransaction = EntityManager | QueryRunner

/** The parts of a TypeORM `DataSource` the adapter reads (public in TypeORM 0.3.20+ and 1.x). */
export interface TypeormDataSource extends TypeormDataSourceLike {
  readonly driver: unknown
  readonly logger: {
    logQuery(query: string, parameters?: unknown[], queryRunner?: unknown): unknown
    logQueryError(error: unknown, query: string, parameters?: unknown[], queryRunner?: unknown): unknown
  }
}

/** The parts of a TypeORM `QueryRunner` the adapter reads (public in TypeORM 0.3.20+ and 1.x). */
export interface TypeormRunner {
  readonly isReleased: boolean
  readonly isTransactionActive: boolean
  readonly manager: unknown
  /** 1.x name of the runner's DataSource. */
  readonly dataSource?: TypeormDataSource
  /** 0.3 name (a deprecated alias in 1.x). */
  readonly connection?: TypeormDataSource
  /**
   * Resolves to the runner's driver connection: a pg `PoolClient` (`postgres`), a mysql2
   * connection (`mysql`, `mariadb`), the DataSource's better-sqlite3 `Database` (`better-sqlite3`).
   */
  connect(): Promise<unknown>
  query(query: string, parameters?: unknown[], useStructuredResult?: boolean): Promise<unknown>
}

/** A handle that passed TypeORM's own checks: a runner with an active, unreleased transaction. */
export interface TypeormOpenTransaction {
  readonly runner: TypeormRunner
  readonly dataSource: TypeormDataSource
  readonly dialect: OutboxDialect
  /** How the handle is named in error messages, e.g. `'an EntityManager'`. */
  readonly what: string
  /** The handle's runner as a sentence subject: `'an EntityManager whose QueryRunner'` or `'a QueryRunner that'`. */
  readonly runnerSubject: string
}

const ADAPTER = 'typeorm'

const HOW =
  'Pass the manager of dataSource.transaction(async (manager) => { ...; await publish(outbox, manager, message) }), or a QueryRunner after await queryRunner.startTransaction() and before its commit or rollback. Nothing was written.'

/** The `NOT_IN_TRANSACTION` error of this adapter. */
export function refuse(what: string, how = HOW, cause?: unknown): OutboxError {
  return new OutboxError('NOT_IN_TRANSACTION', `publish needs an open transaction, got ${what}. ${how}`, {
    source: ADAPTER,
    ...(cause === undefined ? {} : { cause }),
  })
}

/** TypeORM's own class brand (what its `InstanceChecker` reads): works across duplicated installs. */
function hasBrand(value: unknown, name: string): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { '@instanceof'?: unknown })['@instanceof'] === Symbol.for(name)
  )
}

function isEntityManager(value: unknown): value is EntityManager {
  return (
    hasBrand(value, 'EntityManager') ||
    hasBrand(value, 'MongoEntityManager') ||
    hasBrand(value, 'SqljsEntityManager')
  )
}

/**
 * A QueryRunner has no brand of its own; TypeORM gives every runner an EntityManager bound to it
 * (`runner.manager.queryRunner === runner`), which is what recognises one here.
 */
function isQueryRunner(value: unknown): value is QueryRunner {
  if (typeof value !== 'object' || value === null) return false
  const manager = (value as { manager?: unknown }).manager
  return (
    isEntityManager(manager) &&
    (manager as { queryRunner?: unknown }).queryRunner === value &&
    typeof (value as { isTransactionActive?: unknown }).isTransactionActive === 'boolean'
  )
}

function dataSourceOf(value: { dataSource?: unknown; connection?: unknown }): TypeormDataSource {
  return (value.dataSource ?? value.connection) as TypeormDataSource
}

/**
 * The dialect of the DataSource behind `handle` when it is a TypeORM EntityManager or QueryRunner,
 * `undefined` for anything else. Reads no state of the transaction.
 *
 * @throws OutboxError `INVALID_CONFIG` when the DataSource's driver is not supported.
 */
export function handleDialect(handle: unknown): OutboxDialect | undefined {
  if (isEntityManager(handle)) {
    return typeormDialect(dataSourceOf(handle as { dataSource?: unknown; connection?: unknown }), 'publish')
  }
  if (isQueryRunner(handle)) return typeormDialect(dataSourceOf(handle as TypeormRunner), 'publish')
  return undefined
}

/**
 * Recognises `handle` by TypeORM's own signals and returns its runner when it has an open
 * transaction: `queryRunner.isTransactionActive && !queryRunner.isReleased`. Sends nothing.
 *
 * @throws OutboxError `NOT_IN_TRANSACTION` for a DataSource, `dataSource.manager`, a runner
 * without a started transaction, and a committed, rolled-back or released one;
 * `INVALID_CONFIG` for a driver other than `postgres`, `mysql`, `mariadb` and `better-sqlite3`.
 */
export function openTransaction(handle: unknown): TypeormOpenTransaction {
  if (hasBrand(handle, 'DataSource')) {
    throw refuse(
      'a TypeORM DataSource (it runs each query on whichever pooled connection is free, in autocommit, so the message would commit on its own)',
    )
  }
  let runner: TypeormRunner
  let what: string
  let runnerSubject: string
  if (isEntityManager(handle)) {
    // The driver is checked first: a manager of another database gets that answer, whatever its state.
    typeormDialect(dataSourceOf(handle as { dataSource?: unknown; connection?: unknown }), 'publish')
    const queryRunner = (handle as { queryRunner?: unknown }).queryRunner
    if (!queryRunner) {
      throw refuse(
        'an EntityManager without a QueryRunner (dataSource.manager, or dataSource.createEntityManager(): each query runs on a pooled connection in autocommit, so the message would commit on its own)',
      )
    }
    runner = queryRunner as TypeormRunner
    what = 'an EntityManager'
    runnerSubject = 'an EntityManager whose QueryRunner'
  } else if (isQueryRunner(handle)) {
    runner = handle as unknown as TypeormRunner
    what = 'a QueryRunner'
    runnerSubject = 'a QueryRunner that'
  } else {
    const hint = isEntityManager((handle as { manager?: unknown } | null)?.manager)
      ? ' (for a Repository, pass the transaction manager itself)'
      : ''
    throw refuse(`${formatValue(handle)}, which is not a TypeORM EntityManager or QueryRunner${hint}`)
  }
  const dataSource = dataSourceOf(runner)
  const dialect = typeormDialect(dataSource, 'publish')
  if (runner.isReleased) {
    throw refuse(
      `${runnerSubject} was already released (its transaction ended: the handle was kept after dataSource.transaction() returned, or used after queryRunner.release())`,
    )
  }
  if (!runner.isTransactionActive) {
    throw refuse(
      `${runnerSubject} has no open transaction (startTransaction() was not called, or its transaction already committed or rolled back; a raw query('BEGIN') is not tracked by TypeORM, use startTransaction())`,
    )
  }
  return { runner, dataSource, dialect, what, runnerSubject }
}
