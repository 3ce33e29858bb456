/**
 * outboxkit → NATS JetStream, with an idempotent consumer.
 *
 * Each order is committed together with its `order.created` message (one transaction; a declined
 * card rolls both back). The relay forwards every committed message to JetStream with
 * `jetStreamForwarder` and marks it delivered only on the PubAck; `Nats-Msg-Id` is the outbox
 * message id. The shipping consumer applies each message once: it writes the id into
 * `processed_messages` in the same transaction as the shipment, so a redelivery is skipped.
 *
 * `pnpm --filter @outboxkit-examples/nats-forwarder start`. NATS_URL (default 127.0.0.1:4222,
 * JetStream enabled); DATABASE_URL to use your PostgreSQL instead of embedded PGlite.
 */
import { runExample } from './app.js'

runExample({
  natsServers: process.env.NATS_URL ?? '127.0.0.1:4222',
  ...(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : {}),
}).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
