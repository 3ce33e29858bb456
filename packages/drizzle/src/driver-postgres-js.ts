import type { DrizzleDriver } from './driver.js'
import { executeGuarded } from './guarded-statement.js'

/**
 * Drizzle's `drizzle-orm/postgres-js` driver (`PostgresJsSession`). postgres.js keeps no public
 * transaction state (a kept `tx` still runs queries, in autocommit), so the database decides, with
 * core's guarded statement: the same check `@outboxkit/postgres-js` makes.
 *
 * The statement is named, so Drizzle runs it with postgres.js `prepare: true`: one round trip once
 * it is prepared on the connection (unnamed, Drizzle uses `prepare: false`, which costs postgres.js
 * two: Parse/Describe, then Bind/Execute). postgres.js's own `prepare: false` option (for
 * PgBouncer) still wins.
 */
export const postgresJsDriver: DrizzleDriver = {
  name: 'postgres-js',
  guarded: true,
  whyNotOpen: () => undefined,
  execute: (session, statement) => executeGuarded(session, statement, statement.name),
}
