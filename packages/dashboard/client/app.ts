// The dashboard page's script: stats, chart, dead letters, actions, refresh. Compiled with
// client/types.ts and client/dom.ts into src/page/generated/client-script.ts by
// scripts/build-client.mjs (run by the package's build); type-checked against the DOM by
// tsconfig.client.json. Every value from the outbox goes into the page as text, never as HTML.
let writable = config.writable

// ---- stats, chart, topics ----------------------------------------------------------------
const samples: { depth: number; dead: number }[] = []

function renderChart(): void {
  const svg = $('chart') as unknown as SVGSVGElement
  const w = 600
  const h = 120
  const max = Math.max(1, ...samples.map((s) => Math.max(s.depth, s.dead)))
  // One sample draws a flat line across (a polyline of one point draws nothing).
  const drawn = samples.length === 1 ? [samples[0]!, samples[0]!] : samples
  const points = (pick: (s: { depth: number; dead: number }) => number) =>
    drawn
      .map(
        (s, i) =>
          `${((i / Math.max(1, drawn.length - 1)) * w).toFixed(1)},${(h - 4 - (pick(s) / max) * (h - 8)).toFixed(1)}`,
      )
      .join(' ')
  const ns = 'http://www.w3.org/2000/svg'
  svg.replaceChildren()
  for (const [cls, pick] of [
    ['depth', (s: { depth: number }) => s.depth],
    ['dead', (s: { dead: number }) => s.dead],
  ] as const) {
    const line = document.createElementNS(ns, 'polyline')
    line.setAttribute('class', cls)
    line.setAttribute('points', points(pick))
    svg.append(line)
  }
  $('chart-max').textContent = `max ${max}`
}

function renderStats(stats: Stats): void {
  $('table-name').textContent = stats.table
  $('n-pending').textContent = String(stats.states.pending)
  $('n-processing').textContent = String(stats.states.processing)
  $('n-dead').textContent = String(stats.states.dead)
  $('age').textContent = age(stats.oldestPendingAgeMs)
  $('lag').textContent = age(stats.oldestDueLagMs)
  const rows = stats.topics.map((t) =>
    el(
      'tr',
      { 'data-topic': t.topic },
      el('td', {}, t.topic),
      el('td', { class: 'n' }, String(t.pending)),
      el('td', { class: 'n' }, String(t.processing)),
      el('td', { class: 'n' }, String(t.dead)),
      el('td', { class: 'n' }, age(t.oldestPendingAgeMs)),
      el('td', { class: 'n' }, age(t.oldestDueLagMs)),
    ),
  )
  $('topics').replaceChildren(
    ...(rows.length
      ? rows
      : [el('tr', {}, el('td', { colspan: '6', class: 'empty' }, 'The outbox is empty.'))]),
  )
  const select = $<HTMLSelectElement>('topic')
  const chosen = select.value
  select.replaceChildren(
    el('option', { value: '' }, 'all topics'),
    ...stats.topics.map((t) => el('option', { value: t.topic }, t.topic)),
  )
  select.value = stats.topics.some((t) => t.topic === chosen) ? chosen : ''
  renderSlot(stats.slot)
  samples.push({ depth: stats.states.pending + stats.states.processing, dead: stats.states.dead })
  if (samples.length > 120) samples.shift()
  renderChart()
  if (stats.writable !== writable) {
    writable = stats.writable
    applyWritable()
  }
}

/**
 * The replication slot of a `transport: 'wal'` outbox (docs/wal.md, "Slot safety"): whether a relay
 * reads it, the WAL it retains and what is not yet confirmed. Hidden for a `'table'` outbox.
 */
function renderSlot(slot: SlotStats | null | undefined): void {
  const section = $('slot-section')
  section.hidden = slot === undefined
  if (slot === undefined) return
  const warning = $('slot-warning')
  const warn = (text: string | null) => {
    warning.hidden = text === null
    warning.textContent = text ?? ''
  }
  if (slot === null) {
    $('slot-name').textContent = ''
    for (const id of ['slot-active', 'slot-retained', 'slot-lag', 'slot-status']) $(id).textContent = '–'
    warn('The outbox has no replication slot: run migrate(outbox, backend) (outboxkit migrate --wal).')
    return
  }
  $('slot-name').textContent = slot.slot
  $('slot-active').textContent = slot.active ? 'reading' : 'not read'
  $('slot-retained').textContent = bytes(slot.retainedBytes)
  $('slot-lag').textContent = bytes(slot.lagBytes)
  $('slot-status').textContent = slot.walStatus ?? '–'
  warn(
    slot.walStatus === 'lost'
      ? 'The slot was invalidated (wal_status lost): its unread messages are gone. Drop it and run migrate again.'
      : slot.active
        ? null
        : 'No relay reads the slot: it keeps WAL on the server until one does.',
  )
}

function applyWritable(): void {
  document.body.classList.toggle('read-only', !writable)
  $('mode').textContent = writable ? 'actions allowed' : 'read-only'
}

// ---- dead letters ------------------------------------------------------------------------
let filter = { topic: '', q: '' }
let lastPage: DeadPage | undefined
let loaded = 0

function query(after?: string): string {
  const p = new URLSearchParams()
  if (filter.topic) p.set('topic', filter.topic)
  if (filter.q) p.set('q', filter.q)
  if (after) p.set('after', after)
  return `/dead?${p}`
}

function pretty(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2)
}

function deadCard(m: Dead): HTMLElement {
  const field = (name: string, value: string, cls = '') =>
    el(
      'div',
      { class: `field ${cls}` },
      el('span', { class: 'label' }, name),
      el('span', { class: 'value' }, value),
    )
  const actions = el(
    'div',
    { class: 'actions' },
    el('button', { type: 'button', class: 'redrive', 'data-id': m.id }, 'Redrive'),
    el('button', { type: 'button', class: 'discard danger', 'data-id': m.id }, 'Discard'),
  )
  return el(
    'article',
    { class: 'dead', 'data-id': m.id },
    el(
      'header',
      {},
      el('strong', { class: 'topic' }, m.topic),
      el('span', { class: 'key' }, m.key ?? '(no key)'),
      el('time', {}, new Date(m.deadAt).toLocaleString()),
    ),
    el('p', { class: 'error' }, m.lastError ?? '(no error recorded)'),
    el(
      'div',
      { class: 'fields' },
      field('id', m.id, 'mono'),
      field('attempts', String(m.attempts)),
      field('trace', m.traceId ?? '–', 'mono'),
      field('created', new Date(m.createdAt).toLocaleString()),
    ),
    el(
      'details',
      {},
      el('summary', {}, 'payload and headers'),
      el('pre', { class: 'payload' }, pretty(m.payload)),
      el('pre', { class: 'headers' }, pretty(m.headers)),
    ),
    actions,
  )
}

function renderDead(page: DeadPage, append: boolean): void {
  lastPage = page
  const list = $('dead-list')
  const cards = page.messages.map(deadCard)
  if (append) list.append(...cards)
  else
    list.replaceChildren(
      ...(cards.length
        ? cards
        : [
            el(
              'p',
              { class: 'empty' },
              filter.q || filter.topic ? 'No dead message matches.' : 'No dead letters.',
            ),
          ]),
    )
  loaded = append ? loaded + page.messages.length : page.messages.length
  $('more').hidden = page.next === null
  const n = page.matching
  $('matching').textContent = n === null ? '' : `${page.matchingCapped ? `more than ${n}` : n} matching`
  const bulk = $('bulk')
  bulk.hidden = !n || page.matchingCapped
  $('bulk-redrive').textContent = `Redrive all ${n ?? 0}`
  $('bulk-discard').textContent = `Discard all ${n ?? 0}`
}

async function loadDead(append = false): Promise<void> {
  const page = await call<DeadPage>(query(append ? (lastPage?.next ?? undefined) : undefined))
  renderDead(page, append)
}

// ---- actions -----------------------------------------------------------------------------
let pending: { text: string; run: () => Promise<void> } | undefined

function ask(text: string, run: () => Promise<void>): void {
  pending = { text, run }
  $('confirm-text').textContent = text
  $('confirm').hidden = false
  $('confirm-yes').focus()
}

async function confirmYes(): Promise<void> {
  const p = pending
  pending = undefined
  $('confirm').hidden = true
  if (!p) return
  try {
    await p.run()
  } catch (error) {
    notice((error as Error).message, 'error')
  }
  await refresh()
}

function onListClick(event: Event): void {
  const button = (event.target as HTMLElement).closest('button')
  const id = button?.getAttribute('data-id')
  if (!button || !id) return
  const action = button.classList.contains('redrive') ? 'redrive' : 'discard'
  ask(`${action === 'redrive' ? 'Redrive' : 'Discard'} 1 message (${id})?`, async () => {
    await call(`/dead/${encodeURIComponent(id)}/${action}`, { method: 'POST', body: '{}' })
    notice(`${action === 'redrive' ? 'Redriven' : 'Discarded'}: 1 message.`)
  })
}

function onBulk(action: 'redrive' | 'discard'): void {
  const expected = lastPage?.matching ?? 0
  const scope = [filter.topic && `topic ${filter.topic}`, filter.q && `search “${filter.q}”`]
    .filter(Boolean)
    .join(', ')
  ask(
    `${action === 'redrive' ? 'Redrive' : 'Discard'} all ${expected} matching messages${scope ? ` (${scope})` : ''}?`,
    async () => {
      const r = await call<{ redriven?: number; discarded?: number }>(`/dead/${action}`, {
        method: 'POST',
        body: JSON.stringify({ ...filter, expected }),
      })
      notice(
        `${action === 'redrive' ? 'Redriven' : 'Discarded'}: ${r.redriven ?? r.discarded ?? 0} messages.`,
      )
    },
  )
}

// ---- refresh -----------------------------------------------------------------------------
async function loadBlocked(): Promise<void> {
  const { keys } = await call<{ keys: Blocked[] }>('/blocked')
  const rows = keys.map((b) =>
    el(
      'tr',
      {},
      el('td', {}, b.key),
      el('td', {}, b.reason),
      el('td', {}, b.head.topic),
      el('td', { class: 'mono' }, b.head.id),
      el('td', { class: 'n' }, String(b.waiting)),
      el('td', {}, b.head.lastError ?? ''),
    ),
  )
  $('blocked').replaceChildren(
    ...(rows.length
      ? rows
      : [el('tr', {}, el('td', { colspan: '6', class: 'empty' }, 'No key is blocked.'))]),
  )
}

let busy = false
async function refresh(): Promise<void> {
  if (busy) return
  busy = true
  try {
    renderStats(await call<Stats>('/stats'))
    await Promise.all([loaded <= 50 ? loadDead() : Promise.resolve(), loadBlocked()])
    $('updated').textContent = `updated ${new Date().toLocaleTimeString()}`
    document.body.setAttribute('data-loaded', 'true')
  } catch (error) {
    notice(`Refresh failed: ${(error as Error).message}`, 'error')
  } finally {
    busy = false
  }
}

$('search').addEventListener('submit', (event) => {
  event.preventDefault()
  filter = { topic: $<HTMLSelectElement>('topic').value, q: $<HTMLInputElement>('q').value.trim() }
  loaded = 0
  loadDead().catch((error: Error) => notice(error.message, 'error'))
})
$('more').addEventListener('click', () => {
  loadDead(true).catch((error: Error) => notice(error.message, 'error'))
})
$('dead-list').addEventListener('click', onListClick)
$('bulk-redrive').addEventListener('click', () => onBulk('redrive'))
$('bulk-discard').addEventListener('click', () => onBulk('discard'))
$('confirm-yes').addEventListener('click', () => void confirmYes())
$('confirm-no').addEventListener('click', () => {
  pending = undefined
  $('confirm').hidden = true
})
applyWritable()
void refresh()
setInterval(() => {
  if (document.visibilityState === 'visible') void refresh()
}, config.refreshMs)
