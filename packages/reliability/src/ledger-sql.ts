import type { OutboxDialect } from '@outboxkit/core'
import type { LedgerTables } from './ledger.js'
import { keyOrderCreateSql, keyOrderVerdictSql, numberInKeySql } from './ledger-key-order-sql.js'
import { verdictSql } from './ledger-verdict-sql.js'

/**
 * Every SQL text of the ledger method, per dialect, in one place. Statements are written with
 * PostgreSQL's numbered placeholders (`$1`, `$2`, ...); {@link positional} turns them into the
 * `?` placeholders of MySQL and SQLite (a number used twice is bound twice). What differs between
 * the dialects is only here: column types, quoting, "insert unless it exists", the integer cast
 * of counts, and how a relay's open connections are found.
 */
export interface LedgerSql {
  readonly dialect: OutboxDialect
  /** The run's table names, quoted for the dialect. */
  readonly t: { readonly [K in keyof LedgerTables]: string }
  /** Creates the ledger tables (not the outbox: `migrate` does), one statement per entry. */
  readonly create: readonly string[]
  /** Drops every table of the run, one statement per entry. */
  readonly drop: readonly string[]
  /** A handler's side effect: $1 id, $2 attempt, $3 pid, $4 topic. */
  readonly insertLedger: string
  /** May-be-repeated side effect (ignored when already there): $1 id, $2 attempt, $3 why, $4 pid. */
  readonly explain: string
  /** Marks the unsettled side effects of dead process $1 as `killed` (see `captureInFlight`). */
  readonly captureInFlight: string
  /** Records `n` committed ids ($1..$n) of topic $n+1, in the business transaction. */
  insertProduced(n: number): string
  /** Records `n` rolled-back ids ($1..$n), ignoring ids already recorded. */
  insertRolledBack(n: number): string
  /** `n`: rows still `pending` or `processing`. */
  readonly live: string
  /** `n`: distinct messages whose handler performed its side effect. */
  readonly delivered: string
  /** `n`: side effects of process $1 whose message is still `processing` at that attempt (a handler running now). */
  readonly inHandler: string
  /**
   * The query (`n`) of the server connections still open for a relay process: PostgreSQL by its
   * `application_name`, MySQL by the connection ids it registered; `undefined` for SQLite, whose
   * statements die with their process.
   */
  openConnections(relay: { applicationName: string; pid: number }): [string, unknown[]] | undefined
  /** MySQL: run first on each new connection of a relay process ($1 pid), so its connections can be found. */
  readonly registerConnection: string | undefined
  /** The one-row verdict, without `explained` ($1 topic). */
  readonly verdict: string
  /** Rows (why, n): explained side effects of topic $1 by reason. */
  readonly explainedByReason: string
  /** A statement that fails (a producer's failed statement before its rollback). */
  readonly failing: string
  /**
   * Numbers message $1 of key $2 in its key's commit order, in the business transaction
   * (`ledger-key-order-sql.ts`); `undefined` off PostgreSQL, where keyed production is not built.
   */
  readonly numberInKey: string | undefined
  /** The one-row per-key commit order verdict of topic $1; `undefined` off PostgreSQL. */
  readonly keyOrder: string | undefined
}

/** Turns `$n` placeholders into `?` with the parameters in order of use (MySQL, SQLite). */
export function positional(sql: string, params: readonly unknown[]): { sql: string; params: unknown[] } {
  const ordered: unknown[] = []
  const text = sql.replace(/\$(\d+)/g, (_, n: string) => {
    const i = Number(n) - 1
    if (i < 0 || i >= params.length) throw new Error(`placeholder $${n} has no parameter in: ${sql}`)
    ordered.push(params[i])
    return '?'
  })
  return { sql: text, params: ordered }
}

const placeholders = (from: number, n: number) => Array.from({ length: n }, (_, i) => `$${from + i}`)

/** The {@link LedgerSql} of `tables` on `dialect`. */
export function ledgerSql(dialect: OutboxDialect, tables: LedgerTables): LedgerSql {
  const quote = dialect === 'mysql' ? (n: string) => `\`${n}\`` : (n: string) => `"${n}"`
  const t = {
    outbox: quote(tables.outbox),
    ledger: quote(tables.ledger),
    produced: quote(tables.produced),
    rolledBack: quote(tables.rolledBack),
    explained: quote(tables.explained),
    connections: quote(tables.connections),
    keyOrder: quote(tables.keyOrder),
    keyCounter: quote(tables.keyCounter),
  }
  const int = (expr: string) =>
    dialect === 'postgres' ? `(${expr})::int` : dialect === 'mysql' ? `CAST(${expr} AS SIGNED)` : `(${expr})`
  // "Insert unless the key exists": ON CONFLICT DO NOTHING, INSERT IGNORE, INSERT OR IGNORE.
  const insertIgnore = (into: string, rest: string) =>
    dialect === 'postgres'
      ? `INSERT INTO ${into} ${rest} ON CONFLICT DO NOTHING`
      : dialect === 'mysql'
        ? `INSERT IGNORE INTO ${into} ${rest}`
        : `INSERT OR IGNORE INTO ${into} ${rest}`
  return {
    dialect,
    t,
    create: createStatements(dialect, tables, t),
    drop: Object.values(t).map((name) => `DROP TABLE IF EXISTS ${name}`),
    insertLedger: `INSERT INTO ${t.ledger} (id, attempt, pid, topic) VALUES ($1, $2, $3, $4)`,
    explain: insertIgnore(t.explained, '(id, attempt, why, pid) VALUES ($1, $2, $3, $4)'),
    captureInFlight: insertIgnore(
      t.explained,
      `(id, attempt, why, pid)
       SELECT l.id, l.attempt, 'killed', l.pid FROM ${t.ledger} l
       WHERE l.pid = $1 AND EXISTS (SELECT 1 FROM ${t.outbox} o WHERE o.id = l.id)`,
    ),
    insertProduced: (n) =>
      `INSERT INTO ${t.produced} (id, topic) VALUES ${placeholders(1, n)
        .map((p) => `(${p}, $${n + 1})`)
        .join(', ')}`,
    insertRolledBack: (n) =>
      insertIgnore(
        t.rolledBack,
        `(id) VALUES ${placeholders(1, n)
          .map((p) => `(${p})`)
          .join(', ')}`,
      ),
    live: `SELECT ${int('count(*)')} AS n FROM ${t.outbox} WHERE state IN ('pending', 'processing')`,
    delivered: `SELECT ${int('count(DISTINCT id)')} AS n FROM ${t.ledger}`,
    inHandler: `SELECT ${int('count(*)')} AS n FROM ${t.ledger} l JOIN ${t.outbox} o ON o.id = l.id
      WHERE l.pid = $1 AND o.state = 'processing' AND o.attempts = l.attempt`,
    openConnections: ({ applicationName, pid }) =>
      dialect === 'postgres'
        ? [
            `SELECT ${int('count(*)')} AS n FROM pg_stat_activity WHERE application_name = $1`,
            [applicationName],
          ]
        : dialect === 'mysql'
          ? [
              `SELECT ${int('count(*)')} AS n FROM information_schema.PROCESSLIST p
               JOIN ${t.connections} c ON c.conn_id = p.ID WHERE c.pid = $1`,
              [pid],
            ]
          : undefined,
    registerConnection:
      dialect === 'mysql'
        ? `INSERT INTO ${t.connections} (conn_id, pid) VALUES (CONNECTION_ID(), $1)`
        : undefined,
    verdict: verdictSql(t, int),
    explainedByReason: `SELECT e.why AS why, ${int('count(*)')} AS n FROM ${t.explained} e
      JOIN ${t.ledger} l ON l.id = e.id AND l.attempt = e.attempt WHERE l.topic = $1 GROUP BY e.why`,
    failing: `SELECT * FROM ${quote(`${tables.outbox}_no_such_table`)}`,
    numberInKey: dialect === 'postgres' ? numberInKeySql(t) : undefined,
    keyOrder: dialect === 'postgres' ? keyOrderVerdictSql(t) : undefined,
  }
}

function createStatements(
  dialect: OutboxDialect,
  tables: LedgerTables,
  t: LedgerSql['t'],
): readonly string[] {
  switch (dialect) {
    case 'postgres':
      return [
        `CREATE TABLE ${t.ledger} (
          seq bigserial PRIMARY KEY, id uuid NOT NULL, attempt int NOT NULL, pid int NOT NULL,
          topic text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
        `CREATE INDEX ON ${t.ledger} (id)`,
        `CREATE INDEX ON ${t.ledger} (pid)`,
        `CREATE TABLE ${t.produced} (id uuid PRIMARY KEY, topic text NOT NULL)`,
        `CREATE TABLE ${t.rolledBack} (id uuid PRIMARY KEY)`,
        `CREATE TABLE ${t.explained} (
          id uuid NOT NULL, attempt int NOT NULL, why text NOT NULL, pid int NOT NULL,
          PRIMARY KEY (id, attempt))`,
        ...keyOrderCreateSql(t),
      ]
    case 'mysql': {
      // The outbox's id is CHAR(36) ascii_bin: the same type here, so joins compare like for like.
      const id = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL'
      return [
        `CREATE TABLE ${t.ledger} (
          seq BIGINT AUTO_INCREMENT PRIMARY KEY, id ${id}, attempt INT NOT NULL, pid INT NOT NULL,
          topic VARCHAR(255) NOT NULL, at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
          KEY (id), KEY (pid)) ENGINE=InnoDB`,
        `CREATE TABLE ${t.produced} (id ${id} PRIMARY KEY, topic VARCHAR(255) NOT NULL) ENGINE=InnoDB`,
        `CREATE TABLE ${t.rolledBack} (id ${id} PRIMARY KEY) ENGINE=InnoDB`,
        `CREATE TABLE ${t.explained} (
          id ${id}, attempt INT NOT NULL, why VARCHAR(32) NOT NULL, pid INT NOT NULL,
          PRIMARY KEY (id, attempt)) ENGINE=InnoDB`,
        `CREATE TABLE ${t.connections} (
          conn_id BIGINT UNSIGNED NOT NULL PRIMARY KEY, pid INT NOT NULL, KEY (pid)) ENGINE=InnoDB`,
      ]
    }
    case 'sqlite':
      return [
        `CREATE TABLE ${t.ledger} (
          seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, attempt INTEGER NOT NULL,
          pid INTEGER NOT NULL, topic TEXT NOT NULL,
          at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)))`,
        `CREATE INDEX "${tables.ledger}_id_idx" ON ${t.ledger} (id)`,
        `CREATE INDEX "${tables.ledger}_pid_idx" ON ${t.ledger} (pid)`,
        `CREATE TABLE ${t.produced} (id TEXT PRIMARY KEY NOT NULL, topic TEXT NOT NULL)`,
        `CREATE TABLE ${t.rolledBack} (id TEXT PRIMARY KEY NOT NULL)`,
        `CREATE TABLE ${t.explained} (
          id TEXT NOT NULL, attempt INTEGER NOT NULL, why TEXT NOT NULL, pid INTEGER NOT NULL,
          PRIMARY KEY (id, attempt))`,
      ]
    default:
      throw new Error(`[outboxkit] [reliability] unknown dialect ${JSON.stringify(dialect)}`)
  }
}
