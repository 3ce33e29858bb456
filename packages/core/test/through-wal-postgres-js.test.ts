// The relay-semantics tests on the WAL transport, relays on postgresJsBackend, whose replication
// client reads the slot (see support/through-wal.ts).
import { runThroughWal } from './support/through-wal.js'

runThroughWal('postgres-js')
