// What the Redis forwarder tests share: the server's URL, unique key names per test file (with
// the process id) and the read-back of a stream with node-redis's own XRANGE.
import type { ReceivedRecord } from '@outboxkit/conformance'
import { createClient, type RedisClientOptions, type RedisClientType } from 'redis'

/** The Redis server of the tests (REDIS_URL, default the local one). */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

let counter = 0
/** A key name no other test file or run uses: `outboxkit:test:<prefix>:<pid>:<n>`. */
export function uniqueKey(prefix: string): string {
  counter++
  return `outboxkit:test:${prefix}:${process.pid}:${counter}`
}

/** A connected node-redis client; its `error` events are collected instead of thrown. */
export async function connectRedis(options: RedisClientOptions = {}): Promise<RedisReader> {
  const client = createClient({ url: REDIS_URL, ...options }) as unknown as RedisClientType
  const errors: unknown[] = []
  client.on('error', (e: unknown) => errors.push(e))
  await client.connect()
  return Object.assign(client, { errors })
}

/** A connected node-redis client with the `error` events it emitted. */
export type RedisReader = RedisClientType & { readonly errors: unknown[] }

/** The raw fields of every entry of `stream`, in stream order. */
export async function streamEntries(reader: RedisReader, stream: string) {
  const entries = (await reader.xRange(stream, '-', '+')) ?? []
  return entries.flatMap((e) => (e ? [{ entryId: e.id, fields: { ...e.message } }] : []))
}

/** Every entry of `stream` as the conformance suite reads it. */
export async function receivedFrom(reader: RedisReader, stream: string): Promise<ReceivedRecord[]> {
  return (await streamEntries(reader, stream)).map(({ fields }) => ({
    id: String(fields.id),
    topic: String(fields.topic),
    key: fields.key === undefined ? null : String(fields.key),
    headers: JSON.parse(String(fields.headers)) as Record<string, string>,
    payload: JSON.parse(String(fields.payload)) as unknown,
  }))
}

/** A key holding a plain string: XADD to it is refused with WRONGTYPE. */
export async function wrongTypeKey(reader: RedisReader, prefix: string): Promise<string> {
  const key = uniqueKey(prefix)
  await reader.set(key, 'not a stream')
  return key
}
