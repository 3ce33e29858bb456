import type { PostgresPublishStatement } from '@outboxkit/core/adapter'
import { type DrizzleDriver, type DrizzleSession, executeThroughDrizzle, type Rows } from './driver.js'
import { notInTransaction } from './refusal.js'

/** `tx._.session.client`: TS-private in Drizzle, PGlite's own `Transaction` object. */
function closedOf(session: DrizzleSession): unknown {
  return (session as unknown as { client?: { closed?: unknown } }).client?.closed
}

function whyNotOpen(session: DrizzleSession): string | undefined {
  // PGlite's own signal: `closed` turns true once its transaction committed or rolled back.
  return closedOf(session) === true
    ? 'a Drizzle transaction that already committed or rolled back'
    : undefined
}

async function execute(session: DrizzleSession, statement: PostgresPublishStatement): Promise<Rows> {
  // Checked again right before the write: the transaction may have ended while messages were validated.
  const problem = whyNotOpen(session)
  if (problem) throw notInTransaction(problem)
  return executeThroughDrizzle(session, statement)
}

/** Drizzle's `drizzle-orm/pglite` driver (`PgliteSession`). */
export const pgliteDriver: DrizzleDriver = { name: 'pglite', whyNotOpen, execute }
