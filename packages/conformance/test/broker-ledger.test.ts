// The verdict of the forwarders' crash tests, on made-up ledgers: each violation is seen.
import { expect, test } from 'vitest'
import { brokerLedgerVerdict, type ProducedLedger } from '../src/kit/broker-ledger.js'

const ledger: ProducedLedger = {
  committed: [
    { id: 'a1', key: 'a' },
    { id: 'b1', key: 'b' },
    { id: 'a2', key: 'a' },
  ],
  rolledBack: ['r1'],
  transactions: 3,
}
const rec = (id: string) => ({ id, key: id.slice(0, 1) })

test('a clean run: nothing lost, no phantom, no duplicate, in order', () => {
  const v = brokerLedgerVerdict(ledger, ['a1', 'b1', 'a2'].map(rec))
  expect(v).toMatchObject({ lost: [], phantom: [], duplicates: 0, outOfOrderKeys: [], received: 3 })
})

test('lost, phantom, duplicates and a key out of order are each reported', () => {
  const v = brokerLedgerVerdict(ledger, ['a2', 'r1', 'a1', 'a2'].map(rec))
  expect(v.lost).toEqual(['b1'])
  expect(v.phantom).toEqual(['r1'])
  expect(v.duplicates).toBe(1)
  expect(v.outOfOrderKeys).toEqual(['a', 'b'])
})

test('a repeat after a later message does not count as out of order: first appearances decide', () => {
  const v = brokerLedgerVerdict(ledger, ['a1', 'b1', 'a1', 'a2'].map(rec))
  expect(v).toMatchObject({ lost: [], duplicates: 1, outOfOrderKeys: [] })
})
