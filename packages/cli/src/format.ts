/** Formats a duration in ms for people: `850ms`, `12.3s`, `4m 12s`, `3h 05m`, `2d 4h`. */
export function formatDuration(ms: number | null): string {
  if (ms === null) return '-'
  if (ms < 1_000) return `${Math.round(ms)}ms`
  const s = ms / 1_000
  if (s < 60) return `${s.toFixed(1)}s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m}m ${String(Math.floor(s % 60)).padStart(2, '0')}s`
  const h = Math.floor(m / 60)
  if (h < 24) return `${h}h ${String(m % 60).padStart(2, '0')}m`
  return `${Math.floor(h / 24)}d ${h % 24}h`
}

/** Formats a date as UTC `YYYY-MM-DD HH:MM:SS`. */
export function formatTime(date: Date): string {
  return date.toISOString().replace('T', ' ').slice(0, 19)
}

/** Shortens `text` to `max` characters on one line. */
export function oneLine(text: string | null, max: number): string {
  if (text === null) return '-'
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`
}

/** Renders rows as a plain text table; columns named in `right` are right-aligned. */
export function table(header: string[], rows: string[][], right: ReadonlySet<number> = new Set()): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(header), ...rows.map(line)].join('\n')
}
