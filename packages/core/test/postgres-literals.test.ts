// The inline literals of the WAL publish's simple-protocol form (dialect/postgres/values.ts),
// read back by the real server: each tricky string comes back equal to itself, with
// standard_conforming_strings on and off, and a value's own $n is never taken as a placeholder.
import { testDatabaseUrl } from '@outboxkit/conformance'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { inlineTextParameters, postgresTextLiteral } from '../src/dialect/postgres/values.js'

const TRICKY = [
  '',
  "it's",
  "''",
  '\\',
  "\\'",
  "\\\\'; SELECT 1; --",
  '$1 $2 $$ $outboxkit$',
  "E'x'",
  '\\x00 \\u0000 \\n',
  'line\nbreak\ttab\r',
  'é 日本 🚀 ключ',
  '{"a":"b\\"c","d":[1,"\'"]}',
]

let client: pg.Client
beforeAll(async () => {
  client = new pg.Client({ connectionString: testDatabaseUrl() })
  await client.connect()
})
afterAll(() => client.end())

describe('PostgreSQL text literals', () => {
  for (const conforming of ['on', 'off']) {
    test(`each string reads back as itself (standard_conforming_strings = ${conforming})`, async () => {
      await client.query(`SET standard_conforming_strings = ${conforming}`)
      try {
        for (const s of TRICKY) {
          // Simple protocol (no values): exactly how the inline publish is sent.
          const r = await client.query(`SELECT ${postgresTextLiteral(s)}::text AS v`)
          expect(r.rows[0].v).toBe(s)
        }
      } finally {
        await client.query('RESET standard_conforming_strings')
      }
    })
  }

  test('inlineTextParameters replaces each placeholder once, never a $n inside a value', async () => {
    const text = inlineTextParameters('SELECT $1::text AS a, $2::text AS b, $1::text AS c', ['$2', "'$1'"])
    const r = await client.query(text)
    expect(r.rows[0]).toEqual({ a: '$2', b: "'$1'", c: '$2' })
  })
})
