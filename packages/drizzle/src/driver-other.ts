import type { DrizzleDriver } from './driver.js'
import { executeGuarded } from './guarded-statement.js'

/**
 * Any other Drizzle PostgreSQL driver (neon-serverless, vercel-postgres, ...; untested): nothing
 * is known about its transaction state, so it gets core's guarded statement, like postgres.js.
 * Unnamed: drivers built on pg would turn a name into a server-side prepared statement, and the
 * name is the same for every outbox table.
 */
export const otherDriver: DrizzleDriver = {
  name: 'other',
  guarded: true,
  whyNotOpen: () => undefined,
  execute: (session, statement) => executeGuarded(session, statement),
}
