import { type ReceivedRecord, runForwarderConformance } from '@outboxkit/conformance'
import { rabbitmqForwarder } from '@outboxkit/rabbitmq'
import { TestBroker, toReceivedRecord } from './rabbitmq-broker.js'

runForwarderConformance({
  name: 'rabbitmq',
  async setup() {
    const broker = await new TestBroker().start()
    const queue = await broker.queue('conformance')
    const channel = await (await broker.connect()).createConfirmChannel()
    // channel.get takes messages off the queue: what was read stays here until reset().
    let held: ReceivedRecord[] = []
    return {
      forwarder: () =>
        rabbitmqForwarder(channel, {
          exchange: broker.exchange,
          routingKey: 'conformance',
          timeoutMs: 5_000,
        }),
      unroutable: () =>
        rabbitmqForwarder(channel, { exchange: broker.exchange, routingKey: 'bound-to-nothing' }),
      async received() {
        held = [...held, ...(await broker.drain(queue)).map(toReceivedRecord)]
        return held
      },
      async reset() {
        await broker.admin.purgeQueue(queue)
        held = []
      },
      dedupsById: false,
      teardown: () => broker.close(),
    }
  },
})
