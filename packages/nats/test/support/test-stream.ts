// A JetStream stream of one test file, on the real NATS server at 127.0.0.1:4222: created with a
// name and subjects unique to the file and the run (process.pid), read back with the client's own
// stream API, deleted at the end. Nothing else on the server is touched.
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import type { ReceivedRecord } from '@outboxkit/conformance'
import { afterAll, beforeAll, beforeEach } from 'vitest'

/** The NATS server of the tests. */
export const NATS_HOST = '127.0.0.1'
export const NATS_PORT = 4222

/** What the stream holds of one message, with the NATS headers as they arrived. */
export interface StoredRecord extends ReceivedRecord {
  seq: number
  subject: string
  /** Every NATS header, including `Nats-Msg-Id` and the outboxkit ones. */
  natsHeaders: Record<string, string>
}

/** The file's stream: its name, subjects and handles. */
export interface TestStream {
  readonly name: string
  /** The prefix the stream captures: `<prefix>.>`. */
  readonly prefix: string
  readonly nc: NatsConnection
  readonly js: JetStreamClient
  readonly jsm: JetStreamManager
  /** A subject no stream captures. */
  readonly uncaptured: string
  records(): Promise<StoredRecord[]>
  /** A reader that returns, on each call, the records stored since its previous call. */
  newRecords(): () => Promise<StoredRecord[]>
  purge(): Promise<void>
  delete(): Promise<void>
}

/** Connects to NATS directly or through `port` (a proxy), with quick reconnects. */
export function connectNats(port = NATS_PORT): Promise<NatsConnection> {
  return connect({
    servers: `${NATS_HOST}:${port}`,
    reconnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
    name: `outboxkit-nats-test-${process.pid}`,
  })
}

function headersOf(msg: { header: { keys(): string[]; get(k: string): string } }): Record<string, string> {
  const out: Record<string, string> = {}
  for (const k of msg.header.keys()) out[k] = msg.header.get(k)
  return out
}

const OWN = ['Nats-Msg-Id', 'outboxkit-topic', 'outboxkit-key', 'content-type']

async function readAll(jsm: JetStreamManager, name: string, fromSeq = 0): Promise<StoredRecord[]> {
  const { state } = await jsm.streams.info(name)
  const out: StoredRecord[] = []
  if (state.messages === 0) return out
  for (let seq = Math.max(fromSeq, state.first_seq); seq <= state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(name, { seq }).catch(() => null)
    if (m === null) continue
    const natsHeaders = headersOf(m)
    out.push({
      seq,
      subject: m.subject,
      id: natsHeaders['Nats-Msg-Id'] ?? '',
      topic: natsHeaders['outboxkit-topic'] ?? '',
      key: natsHeaders['outboxkit-key'] ?? null,
      headers: Object.fromEntries(Object.entries(natsHeaders).filter(([k]) => !OWN.includes(k))),
      payload: m.json(),
      contentType: natsHeaders['content-type'],
      natsHeaders,
    })
  }
  return out
}

/**
 * Creates the stream `outboxkit_<file>_<pid>` capturing `ok.<pid>.<file>.>`, with a 2-minute
 * duplicate window and the given `max_msg_size` (bytes).
 */
export async function createTestStream(file: string, maxMsgSize = 64 * 1024): Promise<TestStream> {
  const nc = await connectNats()
  const jsm = await jetstreamManager(nc)
  const name = `outboxkit_${file}_${process.pid}`
  const prefix = `ok.${process.pid}.${file}`
  await jsm.streams.delete(name).catch(() => false)
  await jsm.streams.add({
    name,
    subjects: [`${prefix}.>`],
    duplicate_window: 120_000_000_000,
    max_msg_size: maxMsgSize,
  })
  return {
    name,
    prefix,
    nc,
    js: jetstream(nc),
    jsm,
    uncaptured: `none.${process.pid}.${file}.nobody`,
    records: () => readAll(jsm, name),
    newRecords: () => {
      let next = 0
      return async () => {
        const fresh = await readAll(jsm, name, next)
        if (fresh.length > 0) next = fresh[fresh.length - 1]!.seq + 1
        return fresh
      }
    },
    purge: async () => {
      await jsm.streams.purge(name)
    },
    delete: async () => {
      await jsm.streams.delete(name).catch(() => false)
      await nc.close()
    },
  }
}

/**
 * The file's stream for its tests: created before all, emptied before each, deleted after all.
 * Read `stream()` inside tests or hooks.
 */
export function useTestStream(file: string, maxMsgSize?: number): () => TestStream {
  let stream: TestStream | undefined
  beforeAll(async () => {
    stream = await createTestStream(file, maxMsgSize)
  })
  afterAll(() => stream?.delete())
  beforeEach(() => stream?.purge())
  return () => {
    if (stream === undefined) throw new Error(`the stream of ${file} is not created yet`)
    return stream
  }
}
