import type { LedgerSql } from './ledger-sql.js'

// The commit order of keyed messages, per key, kept by the producers independently of outboxkit
// (as in packages/core/test/ordering-ledger.test.ts): in the business transaction, each keyed
// message bumps its key's row of `keyCounter` and records the new number in `keyOrder`. The
// counter row's lock is held until the transaction ends, so a second transaction of the key waits
// for the first to commit or roll back before it draws its number: per key, the numbers of the
// committed messages are in commit order. A rolled-back transaction leaves no row (its number is
// drawn again). PostgreSQL only.

/** The two tables of the per-key commit order (PostgreSQL). */
export function keyOrderCreateSql(t: LedgerSql['t']): string[] {
  return [
    `CREATE TABLE ${t.keyCounter} (msg_key text PRIMARY KEY, n int NOT NULL)`,
    `CREATE TABLE ${t.keyOrder} (id uuid PRIMARY KEY, msg_key text NOT NULL, n int NOT NULL, UNIQUE (msg_key, n))`,
  ]
}

/** Numbers message $1 of key $2 in its key's commit order, in the business transaction. */
export function numberInKeySql(t: LedgerSql['t']): string {
  return `WITH c AS (
    INSERT INTO ${t.keyCounter} AS k (msg_key, n) VALUES ($2, 1)
    ON CONFLICT (msg_key) DO UPDATE SET n = k.n + 1
    RETURNING n)
  INSERT INTO ${t.keyOrder} (id, msg_key, n) SELECT $1, $2, n FROM c`
}

/**
 * The one-row key-order verdict of topic $1: its keys and committed keyed messages, and its
 * deliveries, ordered by the ledger's `seq` (a handler writes its row before it returns, and a
 * key's next message is claimed only once the previous one is settled, after that) and joined
 * with each message's place in its key. `first_out_of_order`: messages whose first delivery came
 * after the first delivery of a message committed later in the same key; `started_after_later`:
 * deliveries (first ones or again) of a message after a later one of its key had started
 * (docs/ordering.md: "once a later message of its key has started, an earlier one never runs
 * again").
 */
export function keyOrderVerdictSql(t: LedgerSql['t']): string {
  return `WITH d AS (
      SELECT o.msg_key, o.n, l.seq, min(l.seq) OVER (PARTITION BY l.id) AS first_seq
      FROM ${t.ledger} l JOIN ${t.keyOrder} o ON o.id = l.id
      WHERE l.topic = $1),
    firsts AS (
      SELECT n, max(n) OVER (PARTITION BY msg_key ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prior_max
      FROM d WHERE seq = first_seq),
    starts AS (
      SELECT n, max(n) OVER (PARTITION BY msg_key ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prior_max
      FROM d)
    SELECT
      (SELECT count(DISTINCT o.msg_key) FROM ${t.keyOrder} o JOIN ${t.produced} p ON p.id = o.id WHERE p.topic = $1)::int AS keys,
      (SELECT count(*) FROM ${t.keyOrder} o JOIN ${t.produced} p ON p.id = o.id WHERE p.topic = $1)::int AS messages,
      (SELECT count(*) FROM firsts)::int AS first_deliveries,
      (SELECT count(*) FROM firsts WHERE prior_max > n)::int AS first_out_of_order,
      (SELECT count(*) FROM starts WHERE prior_max > n)::int AS started_after_later`
}
