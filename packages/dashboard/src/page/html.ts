import { randomBytes } from 'node:crypto'
import { SECURITY_HEADERS } from '../http.js'
import { CLIENT_SCRIPT } from './generated/client-script.js'
import { STYLES } from './styles.js'

/** How often the page refreshes, in ms. */
export const REFRESH_MS = 5000

// The page's fixed markup: every value from the outbox is filled in by the script, as text.
const BODY = `<header class="top"><h1>outboxkit</h1><span class="muted">table <span id="table-name"></span></span><span id="mode"></span><span id="updated"></span></header>
<main>
<div id="notice" class="notice" role="status" hidden></div>
<section aria-labelledby="h-queue"><h2 id="h-queue">Queue</h2>
<div class="cards">
<div class="card"><div class="muted">pending</div><div class="v" id="n-pending">–</div></div>
<div class="card"><div class="muted">processing</div><div class="v" id="n-processing">–</div></div>
<div class="card dead"><div class="muted">dead</div><div class="v" id="n-dead">–</div></div>
<div class="card"><div class="muted">oldest pending</div><div class="v" id="age">–</div></div>
<div class="card"><div class="muted">relay lag</div><div class="v" id="lag">–</div></div>
</div>
<svg id="chart" viewBox="0 0 600 120" preserveAspectRatio="none" role="img" aria-label="depth and dead count while this page is open"></svg>
<div class="legend muted"><span class="l-depth">depth (pending + processing)</span> <span class="l-dead">dead</span> <span id="chart-max"></span></div>
</section>
<section id="slot-section" aria-labelledby="h-slot" hidden><h2 id="h-slot">Replication slot <span id="slot-name" class="muted"></span></h2>
<p id="slot-warning" class="warn" hidden></p>
<div class="cards">
<div class="card"><div class="muted">reader</div><div class="v" id="slot-active">–</div></div>
<div class="card"><div class="muted">WAL retained</div><div class="v" id="slot-retained">–</div></div>
<div class="card"><div class="muted">unconfirmed WAL</div><div class="v" id="slot-lag">–</div></div>
<div class="card"><div class="muted">wal_status</div><div class="v" id="slot-status">–</div></div>
</div></section>
<section aria-labelledby="h-topics"><h2 id="h-topics">Topics</h2><div class="scroll"><table>
<thead><tr><th>topic</th><th class="n">pending</th><th class="n">processing</th><th class="n">dead</th><th class="n">oldest pending</th><th class="n">lag</th></tr></thead>
<tbody id="topics"></tbody></table></div></section>
<section aria-labelledby="h-dead"><h2 id="h-dead">Dead letters <span id="matching"></span></h2>
<form id="search" role="search"><select id="topic" aria-label="topic"><option value="">all topics</option></select>
<input id="q" type="search" placeholder="id, key, topic or error text" aria-label="search"><button type="submit">Search</button></form>
<div id="bulk" hidden><button type="button" id="bulk-redrive">Redrive all</button><button type="button" id="bulk-discard" class="danger">Discard all</button></div>
<div id="dead-list"></div>
<button type="button" id="more" class="plain" hidden>More</button>
</section>
<section aria-labelledby="h-blocked"><h2 id="h-blocked">Blocked keys</h2><div class="scroll"><table>
<thead><tr><th>key</th><th>reason</th><th>head topic</th><th>head id</th><th class="n">waiting</th><th>head error</th></tr></thead>
<tbody id="blocked"></tbody></table></div></section>
</main>
<div id="confirm" role="alertdialog" aria-labelledby="confirm-text" hidden><span id="confirm-text"></span><button type="button" id="confirm-yes">Confirm</button><button type="button" id="confirm-no" class="plain">Cancel</button></div>`

/** JSON for a `<script type="application/json">`: no `<` that could close the element. */
const inertJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c')

/** The page as one HTML document, its style and script inline under a per-response CSP nonce. */
export function pageHtml(basePath: string, writable: boolean, nonce: string): string {
  const script = CLIENT_SCRIPT.replace(/<\//g, '<\\/')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>outboxkit dashboard</title><style nonce="${nonce}">${STYLES}</style></head>
<body class="${writable ? '' : 'read-only'}">
${BODY}
<script type="application/json" id="outboxkit-config">${inertJson({ base: basePath, writable, refreshMs: REFRESH_MS })}</script>
<script nonce="${nonce}">${script}</script>
</body></html>`
}

/** `GET {basePath}`: the page, with a Content-Security-Policy that runs only its own script. */
export function pageResponse(basePath: string, writable: boolean): Response {
  const nonce = randomBytes(16).toString('base64')
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
  return new Response(pageHtml(basePath, writable, nonce), {
    status: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': csp,
      ...SECURITY_HEADERS,
    },
  })
}
