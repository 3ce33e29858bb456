import type { BenchResults } from '../results.js'
import type { OrderingDrainRun } from '../scenarios/ordering.js'
import { round } from '../stats.js'
import { renderForwardMarkdown } from './forward-markdown.js'
import { renderPoolerMarkdown } from './pooler-markdown.js'
import { checkTargets } from './targets.js'

const n = (v: number | undefined) =>
  v === undefined || !Number.isFinite(v) ? 'n/a' : Math.round(v).toLocaleString('en')
const x = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? 'n/a' : `${round(v, 2)} ×`)

/** Renders a run as the markdown tables of bench/results/latest.md and docs/performance.md. */
export function renderMarkdown(r: BenchResults): string {
  const m = r.meta.machine
  const out: string[] = []
  out.push(`# outboxkit bench: ${r.meta.mode} run, ${r.meta.startedAt.slice(0, 16).replace('T', ' ')} UTC`)
  out.push('')
  out.push(
    `Machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB RAM, ${m.platform}; Node ${m.node}; ${m.postgres} (${Object.entries(
      m.postgresSettings,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}); commit ${m.git}.`,
  )
  out.push(
    `Load average (1/5/15 min) at start ${r.meta.loadAverageStart.join(' / ')}, at end ${r.meta.loadAverageEnd.join(' / ')}: other work shared the machine, so compare ratios within this run, not absolute numbers across runs.`,
  )
  if (r.drain) {
    const g = r.drain.find((d) => d.id === 'graphile-worker-best')?.medianPerSecond
    const b = r.drain.find((d) => d.id === 'bare-sql')?.medianPerSecond
    out.push(
      '',
      `## 1. Drain: ${r.meta.config.drainBacklog.toLocaleString('en')}-message backlog, no-op handler (median of ${r.meta.config.drainRounds} round(s))`,
      '',
    )
    out.push(
      '| contender | settings | msg/s | vs graphile-worker best | vs bare SQL | client CPU ms per 1k msg | statements per 1k msg | peak RSS MiB |',
    )
    out.push('|---|---|---:|---:|---:|---:|---:|---:|')
    for (const d of r.drain) {
      if (d.skipped || d.rounds.length === 0) {
        out.push(`| ${d.label} | ${d.settings} | skipped: ${d.skipped ?? 'no result'} | | | | | |`)
        continue
      }
      const last = d.rounds[d.rounds.length - 1]!
      const cpu =
        d.rounds.reduce((a, x) => a + x.cpuUserMs + x.cpuSystemMs, 0) /
        d.rounds.reduce((a, x) => a + x.messages, 0)
      const st = last.statements
      const stmts = st
        ? ((st.claim ?? 0) + (st.settle ?? 0) + (st.total ?? 0)) / (last.messages / 1000)
        : undefined
      out.push(
        `| ${d.label} | ${d.settings} | ${n(d.medianPerSecond)} | ${x(g ? d.medianPerSecond / g : undefined)} | ${x(b ? d.medianPerSecond / b : undefined)} | ${round(cpu * 1000, 0)} | ${stmts === undefined ? 'n/a' : round(stmts, 1)} | ${Math.max(...d.rounds.map((x) => x.peakRssMiB))} |`,
      )
    }
  }
  if (r.publish) {
    out.push(
      '',
      `## 2. Publish: ${r.meta.config.publishProducers} concurrent producers, \`BEGIN; INSERT order; …; COMMIT\` (median of ${r.meta.config.publishRounds} round(s), ${r.meta.config.publishDurationMs / 1000} s each)`,
      '',
    )
    out.push('| transaction | tps | vs business only (same driver) | tx p50 ms | tx p99 ms |')
    out.push('|---|---:|---:|---:|---:|')
    for (const p of r.publish) {
      if (p.skipped || p.rounds.length === 0) {
        out.push(`| ${p.label} | skipped: ${p.skipped ?? 'no result'} | | | |`)
        continue
      }
      const last = p.rounds[p.rounds.length - 1]!
      out.push(`| ${p.label} | ${n(p.medianTps)} | ${x(p.ratio)} | ${last.txP50Ms} | ${last.txP99Ms} |`)
    }
  }
  if (r.latency) {
    out.push(
      '',
      `## 3. End-to-end latency, commit acknowledged → handler start, open loop (${r.meta.config.latencyDurationMs / 1000} s per rate, NOTIFY on)`,
      '',
    )
    out.push('| offered msg/s | consumer | committed msg/s | delivered | p50 ms | p95 ms | p99 ms | max ms |')
    out.push('|---:|---|---:|---:|---:|---:|---:|---:|')
    for (const l of r.latency) {
      // 'proto-adaptive' only appears in result files recorded before issue #13 removed the prototypes.
      out.push(
        `| ${n(l.offeredRate)} | ${l.contender === 'proto-adaptive' ? 'proto-adaptive (prototype, not core: adaptive wake, hot relay polls every 5 ms)' : l.contender} | ${n(l.achievedRate)} | ${l.delivered}/${l.messages} | ${l.p50Ms} | ${l.p95Ms} | ${l.p99Ms} | ${l.maxMs} |`,
      )
    }
  }
  if (r.mixed) {
    out.push(
      '',
      `## 4. Sustained mixed load: ${r.meta.config.mixedProducers} producers and two relays (defaults) for ${r.meta.config.mixedDurationMs / 1000} s`,
      '',
    )
    out.push(
      '| run | produced msg/s | delivered msg/s | max backlog | backlog left after 30 s tail | backlog every second |',
    )
    out.push('|---|---:|---:|---:|---:|---|')
    for (const mx of r.mixed) {
      out.push(
        `| ${mx.label} | ${n(mx.producedPerSecond)} | ${n(mx.deliveredPerSecond)} | ${n(mx.maxBacklog)} | ${n(mx.finalBacklog)} | ${mx.timeline.map((t) => t[1]).join(' ')} |`,
      )
    }
  }
  if (r.growth) {
    const fresh = r.growth.claims.find((c) => c.condition.startsWith('fresh, 10,000'))
    out.push(
      '',
      '## 5. Growth: claim cost (core claim statement, 100 rows, single connection, claim + delete loop)',
      '',
    )
    out.push(
      '| table condition | live rows | dead tuples | table / index MiB | claim p50 ms | claim p95 ms | rows/s | vs fresh 10k |',
    )
    out.push('|---|---:|---:|---:|---:|---:|---:|---:|')
    for (const c of r.growth.claims) {
      out.push(
        `| ${c.condition} | ${n(c.liveRows)} | ${n(c.deadTuples)} | ${c.tableMiB} / ${c.indexMiB} | ${c.claimP50Ms} | ${c.claimP95Ms} | ${n(c.rowsPerSecond)} | ${x(fresh ? c.rowsPerSecond / fresh.rowsPerSecond : undefined)} |`,
      )
    }
  }
  if (r.memory) {
    const mm = r.memory
    out.push(
      '',
      `## 6. Memory: relay (${mm.relay}) draining ${mm.messages.toLocaleString('en')} messages in a child process`,
      '',
    )
    out.push(
      `Peak RSS ${mm.peakRssMiB} MiB (sampled ${mm.sampledPeakRssMiB} MiB); ${mm.baselineRssMiB} MiB after loading modules (Node + outboxkit + pg, bundled to plain JavaScript, no tsx), before the relay started; drained at ${n(mm.perSecond)} msg/s in ${mm.seconds} s.`,
    )
  }
  if (r.ordering) {
    const o = r.ordering
    const c = r.meta.config
    out.push(
      '',
      `## 7. Ordering: unordered vs \`orderedTopics\` topic, ${n(o.backlog)} messages over ${n(o.keys)} keys, same relay settings, side by side (median of ${c.orderingDrainRounds} round(s))`,
      '',
    )
    out.push(
      '| relays | settings | unordered msg/s | ordered msg/s | ordered / unordered (median of rounds) | per round | claims per 1k msg (unordered / ordered) | relay CPU ms per 1k msg (unordered / ordered) |',
    )
    out.push('|---:|---|---:|---:|---:|---|---:|---:|')
    const per1k = (runs: OrderingDrainRun[], v: (x: OrderingDrainRun) => number) => {
      const msgs = runs.reduce((a, x) => a + x.messages, 0)
      return msgs ? n((runs.reduce((a, x) => a + v(x), 0) / msgs) * 1000) : 'n/a'
    }
    for (const d of o.drain) {
      if (d.skipped && d.roundRatios.length === 0) {
        out.push(`| ${d.relays} | ${d.settings} | skipped: ${d.skipped} | | | | | |`)
        continue
      }
      const u = d.unordered.rounds
      const od = d.ordered.rounds
      out.push(
        `| ${d.relays} | ${d.settings} | ${n(d.unordered.medianPerSecond)} | ${n(d.ordered.medianPerSecond)} | ${x(d.ratio)} | ${d.roundRatios.join(', ')} | ${per1k(u, (y) => y.claims)} / ${per1k(od, (y) => y.claims)} | ${per1k(u, (y) => y.relayCpuMs)} / ${per1k(od, (y) => y.relayCpuMs)} |`,
      )
    }
    out.push(
      '',
      `Publish: ${o.producers} closed-loop producers, \`BEGIN; INSERT order; publish (notify: false); COMMIT\` (median of ${c.orderingPublishRounds} round(s), ${c.orderingPublishDurationMs / 1000} s each; distinct keys cycle over ${n(o.keys)}):`,
      '',
    )
    out.push('| transaction | tx/s | vs unordered (median of rounds) | per round | tx p50 ms | tx p99 ms |')
    out.push('|---|---:|---:|---|---:|---:|')
    for (const p of o.publish) {
      if (p.skipped || p.rounds.length === 0) {
        out.push(`| ${p.label} | skipped: ${p.skipped ?? 'no result'} | | | | |`)
        continue
      }
      const last = p.rounds[p.rounds.length - 1]!
      out.push(
        `| ${p.label} | ${n(p.medianTps)} | ${x(p.ratio)} | ${p.roundRatios.join(', ')} | ${last.txP50Ms} | ${last.txP99Ms} |`,
      )
    }
  }
  if (r.backends) {
    const b = r.backends
    out.push(
      '',
      `## 8. MySQL and SQLite: drain of a ${n(b.backlog)}-message backlog, no-op handler, PostgreSQL as the reference, side by side (median of ${b.rounds} round(s))`,
      '',
    )
    out.push(
      '| relay settings | database | relay connection | msg/s | vs PostgreSQL (median of rounds) | per round | claims per 1k msg | relay CPU ms per 1k msg | peak RSS MiB |',
    )
    out.push('|---|---|---|---:|---:|---|---:|---:|---:|')
    for (const g of b.groups) {
      for (const row of g.rows) {
        if (row.rounds.length === 0) {
          out.push(
            `| ${g.label} | ${row.label} | ${row.connection} | skipped: ${row.skipped ?? 'no result'} | | | | | |`,
          )
          continue
        }
        const msgs = row.rounds.reduce((a, y) => a + y.messages, 0)
        const claims = (row.rounds.reduce((a, y) => a + y.claims, 0) / msgs) * 1000
        const cpu = (row.rounds.reduce((a, y) => a + y.cpuUserMs + y.cpuSystemMs, 0) / msgs) * 1000
        out.push(
          `| ${g.label} | ${row.label} | ${row.connection} | ${n(row.medianPerSecond)}${row.skipped ? ` (then failed: ${row.skipped})` : ''} | ${x(row.ratio)} | ${row.roundRatios.join(', ')} | ${round(claims, 1)} | ${n(cpu)} | ${Math.max(...row.rounds.map((y) => y.peakRssMiB))} |`,
        )
      }
    }
    const servers = b.groups[0]?.rows ?? []
    out.push('', ...servers.map((row) => `- ${row.label}: ${row.server || row.skipped || 'n/a'}`))
  }
  if (r.pooler) out.push('', ...renderPoolerMarkdown(r.pooler))
  if (r.forward) out.push('', ...renderForwardMarkdown(r.forward))
  const checks = checkTargets(r)
  if (checks.length) {
    out.push('', '## Targets of issue 5 on this run', '')
    out.push('| target | measured | met |')
    out.push('|---|---|---|')
    for (const c of checks)
      out.push(`| ${c.target} | ${c.measured} | ${c.met === undefined ? 'n/a' : c.met ? 'yes' : '**no**'} |`)
  }
  out.push('')
  return out.join('\n')
}
