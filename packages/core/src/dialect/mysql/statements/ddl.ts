import type { MysqlStatements } from '../statements.js'
import { type MysqlTable, NOW, quoteMysqlIdent } from './table.js'

/** The DDL of the outbox table and of its companion table of ordered keys, and what `migrate` runs. */
export function mysqlDdlStatements(table: MysqlTable): Pick<MysqlStatements, 'ddl' | 'keysDdl' | 'migrate'> {
  const { t, keys, names } = table
  const q = quoteMysqlIdent
  // Column names follow the PostgreSQL table. MySQL has no partial index, so the claim's index is
  // on a generated column that is NULL for terminal rows (`due_at`), and `dedup_key` / `key` are
  // indexed through SHA-256 hashes: exact byte comparison (no trailing-space padding), and no
  // 3072-byte index limit on 1024-character keys.
  const createTable = `CREATE TABLE IF NOT EXISTS ${t} (
  id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  topic VARCHAR(255) NOT NULL,
  \`key\` VARCHAR(1024) NULL,
  payload JSON NOT NULL,
  headers JSON NOT NULL DEFAULT ('{}'),
  state VARCHAR(10) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'pending',
  attempts INT NOT NULL DEFAULT 0,
  available_at DATETIME(6) NOT NULL DEFAULT (${NOW}),
  created_at DATETIME(6) NOT NULL DEFAULT (${NOW}),
  dedup_key VARCHAR(1024) NULL,
  last_error MEDIUMTEXT NULL,
  seq BIGINT NULL,
  due_at DATETIME(6) AS (CASE WHEN state IN ('pending', 'processing') THEN available_at END) STORED,
  dedup_hash BINARY(32) AS (UNHEX(SHA2(dedup_key, 256))) STORED,
  key_hash BINARY(32) AS (CASE WHEN seq IS NOT NULL THEN UNHEX(SHA2(\`key\`, 256)) END) STORED,
  PRIMARY KEY (id),
  KEY ${q(names.due)} (due_at, id),
  UNIQUE KEY ${q(names.dedupKey)} (dedup_hash),
  KEY ${q(names.keySeq)} (key_hash, seq),
  CONSTRAINT ${q(names.stateCheck)} CHECK (state IN ('pending', 'processing', 'delivered', 'dead'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
  const createKeys = `CREATE TABLE IF NOT EXISTS ${keys} (
  key_hash BINARY(32) NOT NULL,
  \`key\` VARCHAR(1024) NOT NULL,
  seq BIGINT NOT NULL,
  PRIMARY KEY (key_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
  const plain = [createTable]
  const withKeys = [createTable, createKeys]
  return {
    ddl: `${createTable};\n`,
    keysDdl: `${createKeys};\n`,
    migrate: (ordered) => (ordered ? withKeys : plain),
  }
}
