import type { BenchResults } from '../results.js'

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const COLORS: Record<string, string> = {
  outboxkit: '#2563eb',
  'graphile-worker': '#f59e0b',
  'pg-boss': '#10b981',
  'bare-sql': '#6b7280',
  /** Rows of the prototype relay, removed in issue #13: kept so `bench:render` redraws older result files. */
  prototype: '#93c5fd',
}

function header(width: number, height: number, title: string, subtitle: string): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="24" font-size="15" font-weight="600">${esc(title)}</text>`,
    `<text x="16" y="42" fill="#555">${esc(subtitle)}</text>`,
  ]
}

function niceMax(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v || 1))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p
  return 10 * p
}

/** Horizontal bars of scenario 1 (median msg/s per contender). Hand-written SVG, no dependencies. */
export function renderDrainSvg(r: BenchResults): string {
  const rows = (r.drain ?? []).filter((d) => !d.skipped && d.rounds.length > 0)
  const labelW = 250
  const chartW = 460
  const barH = 22
  const gap = 8
  const top = 60
  const height = top + rows.length * (barH + gap) + 40
  const width = labelW + chartW + 90
  const max = niceMax(Math.max(1, ...rows.map((d) => d.medianPerSecond)))
  const s = header(
    width,
    height,
    `Drain of a ${r.meta.config.drainBacklog.toLocaleString('en')}-message backlog, no-op handler (msg/s, higher is better)`,
    `${r.meta.mode} run ${r.meta.startedAt.slice(0, 10)}, ${r.meta.machine.cpus} CPUs, ${r.meta.machine.postgres}, load ${r.meta.loadAverageStart[0]}`,
  )
  for (let i = 0; i <= 4; i++) {
    const xv = labelW + (chartW * i) / 4
    s.push(`<line x1="${xv}" y1="${top - 6}" x2="${xv}" y2="${height - 30}" stroke="#e5e7eb"/>`)
    s.push(
      `<text x="${xv}" y="${height - 14}" text-anchor="middle" fill="#555">${Math.round((max * i) / 4).toLocaleString('en')}</text>`,
    )
  }
  rows.forEach((d, i) => {
    const y = top + i * (barH + gap)
    const w = Math.max(1, (chartW * d.medianPerSecond) / max)
    s.push(`<text x="${labelW - 8}" y="${y + barH / 2 + 4}" text-anchor="end">${esc(d.label)}</text>`)
    s.push(
      `<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${COLORS[d.family] ?? '#999'}" rx="2"/>`,
    )
    s.push(
      `<text x="${labelW + w + 6}" y="${y + barH / 2 + 4}">${d.medianPerSecond.toLocaleString('en')}</text>`,
    )
  })
  s.push('</svg>')
  return `${s.join('\n')}\n`
}

/** Grouped bars of scenario 3 (p50/p95/p99 per consumer and rate), log scale. */
export function renderLatencySvg(r: BenchResults): string {
  const rows = r.latency ?? []
  const labelW = 250
  const chartW = 460
  const barH = 9
  const groupGap = 14
  const top = 76
  const height = top + rows.length * (barH * 3 + groupGap) + 40
  const width = labelW + chartW + 90
  const values = rows.flatMap((l) => [l.p50Ms, l.p95Ms, l.p99Ms]).filter((v) => v > 0)
  const lo = 0.1
  const hi = 10 ** Math.ceil(Math.log10(Math.max(10, ...values)))
  const scale = (v: number) =>
    (chartW * (Math.log10(Math.max(lo, v)) - Math.log10(lo))) / (Math.log10(hi) - Math.log10(lo))
  const s = header(
    width,
    height,
    'End-to-end latency, commit → handler start (ms, log scale, lower is better)',
    `open loop, NOTIFY on; ${r.meta.mode} run ${r.meta.startedAt.slice(0, 10)}, load ${r.meta.loadAverageStart[0]}`,
  )
  const shades = [
    ['p50', 1],
    ['p95', 0.65],
    ['p99', 0.35],
  ] as const
  shades.forEach(([name, op], i) => {
    s.push(`<rect x="${labelW + i * 70}" y="52" width="12" height="10" fill="#374151" fill-opacity="${op}"/>`)
    s.push(`<text x="${labelW + i * 70 + 16}" y="61">${name}</text>`)
  })
  for (let e = Math.log10(lo); e <= Math.log10(hi) + 1e-9; e++) {
    const xv = labelW + scale(10 ** e)
    s.push(
      `<line x1="${xv.toFixed(1)}" y1="${top - 6}" x2="${xv.toFixed(1)}" y2="${height - 30}" stroke="#e5e7eb"/>`,
    )
    s.push(
      `<text x="${xv.toFixed(1)}" y="${height - 14}" text-anchor="middle" fill="#555">${10 ** e >= 1 ? 10 ** e : (10 ** e).toFixed(1)}</text>`,
    )
  }
  rows.forEach((l, i) => {
    const y = top + i * (barH * 3 + groupGap)
    const family = l.contender.startsWith('outboxkit')
      ? 'outboxkit'
      : l.contender.startsWith('proto')
        ? 'prototype'
        : 'graphile-worker'
    s.push(
      `<text x="${labelW - 8}" y="${y + barH * 1.5 + 4}" text-anchor="end">${esc(`${l.contender} @ ${l.offeredRate.toLocaleString('en')}/s`)}</text>`,
    )
    ;[l.p50Ms, l.p95Ms, l.p99Ms].forEach((v, j) => {
      const w = Math.max(1, scale(v))
      s.push(
        `<rect x="${labelW}" y="${y + j * barH}" width="${w.toFixed(1)}" height="${barH - 1}" fill="${COLORS[family]}" fill-opacity="${shades[j]![1]}"/>`,
      )
      s.push(`<text x="${labelW + w + 4}" y="${y + j * barH + barH - 1}" font-size="10">${v}</text>`)
    })
  })
  s.push('</svg>')
  return `${s.join('\n')}\n`
}
