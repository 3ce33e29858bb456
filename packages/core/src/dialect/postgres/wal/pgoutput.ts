// The few messages of PostgreSQL's streaming replication protocol and of the pgoutput plugin
// (proto_version 1) that the WAL transport reads: XLogData carrying Begin, Message and Commit,
// the primary keepalive, and the standby status update the relay answers with. Every other
// pgoutput message (Relation, Insert, Origin, ...) is skipped: the slot's publication has no table.
// https://www.postgresql.org/docs/current/protocol-replication.html
// https://www.postgresql.org/docs/current/protocol-logicalrep-message-formats.html

/** One decoded CopyData chunk of the replication stream. */
export type ReplicationEvent =
  | { readonly kind: 'begin'; readonly finalLsn: bigint }
  | {
      readonly kind: 'message'
      readonly lsn: bigint
      readonly transactional: boolean
      readonly prefix: string
      readonly content: Buffer
    }
  | { readonly kind: 'commit'; readonly commitLsn: bigint; readonly endLsn: bigint }
  | { readonly kind: 'keepalive'; readonly walEnd: bigint; readonly replyRequested: boolean }
  | { readonly kind: 'other' }

const OTHER: ReplicationEvent = { kind: 'other' }

/** Decodes one CopyData chunk of a `START_REPLICATION ... LOGICAL` stream read with pgoutput. */
export function decodeReplicationChunk(chunk: Buffer): ReplicationEvent {
  const tag = chunk[0]
  if (tag === 0x6b /* k: primary keepalive */) {
    return { kind: 'keepalive', walEnd: chunk.readBigUInt64BE(1), replyRequested: chunk[17] === 1 }
  }
  if (tag !== 0x77 /* w: XLogData */) return OTHER
  // w, Int64 dataStart, Int64 walEnd, Int64 sendTime, then the pgoutput message.
  const body = 25
  const type = chunk[body]
  if (type === 0x42 /* B */) return { kind: 'begin', finalLsn: chunk.readBigUInt64BE(body + 1) }
  if (type === 0x43 /* C */) {
    // C, Int8 flags, Int64 commit lsn, Int64 end lsn, Int64 timestamp
    return {
      kind: 'commit',
      commitLsn: chunk.readBigUInt64BE(body + 2),
      endLsn: chunk.readBigUInt64BE(body + 10),
    }
  }
  if (type === 0x4d /* M */) {
    // M, Int8 flags (1: transactional), Int64 lsn, String prefix, Int32 length, Byte[n] content
    const transactional = chunk[body + 1] === 1
    const lsn = chunk.readBigUInt64BE(body + 2)
    const prefixStart = body + 10
    const prefixEnd = chunk.indexOf(0, prefixStart)
    const prefix = chunk.toString('utf8', prefixStart, prefixEnd)
    const length = chunk.readUInt32BE(prefixEnd + 1)
    const content = chunk.subarray(prefixEnd + 5, prefixEnd + 5 + length)
    return { kind: 'message', lsn, transactional, prefix, content }
  }
  return OTHER
}

/** Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
const PG_EPOCH_US = 946_684_800_000_000n

/**
 * A standby status update: `lsn` received, flushed and applied (the slot's `confirmed_flush_lsn`
 * moves to it), with the current time; `replyRequested` asks the server for a keepalive back.
 */
export function standbyStatusUpdate(lsn: bigint, replyRequested = false): Buffer {
  const b = Buffer.alloc(34)
  b[0] = 0x72 // r
  b.writeBigUInt64BE(lsn, 1)
  b.writeBigUInt64BE(lsn, 9)
  b.writeBigUInt64BE(lsn, 17)
  b.writeBigUInt64BE(BigInt(Date.now()) * 1000n - PG_EPOCH_US, 25)
  b[33] = replyRequested ? 1 : 0
  return b
}

/** An LSN as PostgreSQL writes it (`16/B374D848`). */
export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`
}

/** Parses PostgreSQL's LSN text (`16/B374D848`). */
export function parseLsn(text: string): bigint {
  const [hi, lo] = text.split('/')
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`)
}
