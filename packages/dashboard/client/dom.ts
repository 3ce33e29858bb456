// Helpers of the page's script: the config, the API, elements built from text only, formats.
const config = JSON.parse(document.getElementById('outboxkit-config')?.textContent ?? '{}') as Config
const api = (path: string) => `${config.base}/api${path}`
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T

type Child = Node | string | null | undefined | false
/** An element with attributes and children; strings become text nodes, never markup. */
function el(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v)
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c)
  return e
}

function age(ms: number | null): string {
  if (ms === null) return '–'
  if (ms < 1000) return `${Math.round(ms)} ms`
  const s = ms / 1000
  if (s < 60) return `${s.toFixed(1)} s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m}m ${Math.floor(s % 60)}s`
  const h = Math.floor(m / 60)
  return h < 48 ? `${h}h ${m % 60}m` : `${Math.floor(h / 24)}d ${h % 24}h`
}

function bytes(n: number): string {
  if (n < 1024) return `${Math.round(n)} B`
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  let v = n / 1024
  let i = 0
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`
}

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(api(path), {
    ...init,
    headers: { accept: 'application/json', ...(init?.body ? { 'content-type': 'application/json' } : {}) },
  })
  const body = (await response.json().catch(() => ({}))) as T & { error?: { message: string } }
  if (!response.ok)
    throw Object.assign(new Error(body.error?.message ?? `HTTP ${response.status}`), {
      status: response.status,
      body,
    })
  return body
}

function notice(text: string, kind: 'ok' | 'error' = 'ok'): void {
  const box = $('notice')
  box.textContent = text
  box.className = `notice ${kind}`
  box.hidden = false
}
