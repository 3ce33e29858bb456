import { DrizzleQueryError } from 'drizzle-orm/errors'

/**
 * Drizzle wraps driver errors in a DrizzleQueryError whose message holds the statement and every
 * parameter (the whole payload); the driver's own error carries the code (SQLSTATE, errno) that
 * tells a timeout from other failures. Reported instead, so payloads stay out of messages and logs.
 */
export function driverError(err: unknown): unknown {
  const wrapped = typeof DrizzleQueryError === 'function' && err instanceof DrizzleQueryError
  return wrapped && err.cause !== undefined ? err.cause : err
}
