// The relay-semantics tests on the WAL transport, relays on pgBackend (see support/through-wal.ts).
import { runThroughWal } from './support/through-wal.js'

runThroughWal('pg')
