import type { ForwardResult } from '../scenarios/forward.js'

/** Scenario 10 (forwarders vs the bare broker clients) as markdown lines. */
export function renderForwardMarkdown(f: ForwardResult): string[] {
  const o = f.options
  const rate = (x: { perSecond: number }) => Math.round(x.perSecond)
  const cpu = (x: { cpuUserMs: number; cpuSystemMs: number; messages: number }) =>
    Math.round(((x.cpuUserMs + x.cpuSystemMs) / x.messages) * 1000)
  return [
    `## 10. Forwarders: the relay into each broker vs the bare client (${o.rounds} round(s))`,
    '',
    `Relay: a ${o.count.toLocaleString('en')}-message outbox backlog drained on relay defaults (pgBackend pool 10) through jetStreamForwarder / rabbitmqForwarder / redisStreamForwarder on their defaults, timed from \`relay.start()\` to the last delivered settle. Bare: the broker's own client publishing ${o.count.toLocaleString('en')} messages with confirmations (\`js.publish\` awaited, amqplib confirm channel with a callback per message, node-redis XADD), ${o.window} awaited at once. Each in its own process on the shared brokers; the order rotates every round and the ratios are taken within a round. No-op relay: the same relay and backlog with a no-op handler, no broker: the database side's own limit on this machine in that round. Target: relay / bare >= 0.7.`,
    '',
    '| broker | relay / bare (median) | per round | relay / no-op relay (median) | per round |',
    '|---|---:|---|---:|---|',
    ...f.brokers.map(
      (b) =>
        `| ${b.broker} | ${b.median.toFixed(3)} × | ${b.ratios.map((x) => x.toFixed(3)).join(', ')} | ${b.medianVsNoop.toFixed(3)} × | ${b.vsNoop.map((x) => x.toFixed(3)).join(', ')} |`,
    ),
    '',
    '| broker | relay msg/s | bare msg/s | no-op relay msg/s | relay CPU ms per 1k | bare CPU ms per 1k | no-op CPU ms per 1k |',
    '|---|---|---|---|---|---|---|',
    ...f.brokers.map(
      (b) =>
        `| ${b.broker} | ${b.relay.map(rate).join(', ')} | ${b.bare.map(rate).join(', ')} | ${b.noop.map(rate).join(', ')} | ${b.relay.map(cpu).join(', ')} | ${b.bare.map(cpu).join(', ')} | ${b.noop.map(cpu).join(', ')} |`,
    ),
    '',
    ...f.order.map((r) => `- ${r.broker} round ${r.round} (load ${r.load}): ${r.ran.join(' → ')}`),
  ]
}
