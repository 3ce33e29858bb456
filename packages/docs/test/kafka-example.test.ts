// docs/forwarders/kafka.md shows examples/kafka-forwarder/src/kafka-handler.ts, which CI
// type-checks (it cannot run: no Kafka broker here). The page must show the file as it is.
import { readFileSync } from 'node:fs'
import { expect, test } from 'vitest'

const root = new URL('../../../', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, root), 'utf8')

test('docs/forwarders/kafka.md shows the type-checked Kafka handler exactly', () => {
  const page = read('docs/forwarders/kafka.md')
  const file = read('examples/kafka-forwarder/src/kafka-handler.ts')
  const blocks = [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1])
  expect(blocks).toContain(file)
})
