/** The page's style sheet: no web font, no external asset; one column on a phone. */
export const STYLES = `
:root{color-scheme:light dark;--bg:#f6f7f9;--card:#fff;--fg:#1d2430;--muted:#667085;--line:#d9dee7;--accent:#2f6fde;--dead:#c2341f;--ok:#1c7c3c}
@media (prefers-color-scheme:dark){:root{--bg:#111418;--card:#1b2027;--fg:#e6e9ef;--muted:#98a2b3;--line:#2d3540;--accent:#6ea1ff;--dead:#ff7a66;--ok:#5dd38a}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
header.top{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:baseline;padding:.8rem 1rem;border-bottom:1px solid var(--line);background:var(--card)}
header.top h1{font-size:1.1rem;margin:0}
.muted,#updated,#matching{color:var(--muted);font-size:.85rem}
#mode{font-size:.75rem;padding:.1rem .5rem;border-radius:1rem;border:1px solid var(--line)}
body.read-only #mode{color:var(--dead);border-color:var(--dead)}
main{max-width:1100px;margin:0 auto;padding:1rem;display:grid;gap:1rem}
section{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:.8rem 1rem;min-width:0}
h2{font-size:1rem;margin:0 0 .6rem}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(130px,1fr));gap:.6rem}
.card{border:1px solid var(--line);border-radius:.4rem;padding:.5rem .7rem}
.card .v{font-size:1.4rem;font-variant-numeric:tabular-nums}
.card.dead .v{color:var(--dead)}
svg#chart{width:100%;height:120px;display:block}
svg#chart polyline{fill:none;stroke-width:2;vector-effect:non-scaling-stroke}
svg#chart .depth{stroke:var(--accent)}svg#chart .dead{stroke:var(--dead)}
.legend .l-depth::before,.legend .l-dead::before{content:"";display:inline-block;width:.8rem;height:.2rem;margin-right:.3rem;vertical-align:middle;background:currentColor}
.legend .l-depth{color:var(--accent)}.legend .l-dead{color:var(--dead)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid var(--line);vertical-align:top;overflow-wrap:anywhere}
th{color:var(--muted);font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.empty{color:var(--muted)}
.mono,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.8rem}
form#search{display:flex;flex-wrap:wrap;gap:.5rem;margin-bottom:.6rem}
form#search input{flex:1 1 14rem;min-width:0}
input,select,button{font:inherit;padding:.4rem .6rem;border:1px solid var(--line);border-radius:.35rem;background:var(--card);color:var(--fg)}
button{cursor:pointer;background:var(--accent);border-color:var(--accent);color:#fff}
button.danger{background:transparent;color:var(--dead);border-color:var(--dead)}
button.plain{background:transparent;color:var(--fg)}
body.read-only .actions,body.read-only #bulk{display:none}
#bulk{display:flex;gap:.5rem;flex-wrap:wrap;margin:.4rem 0}
#bulk[hidden],#more[hidden],#confirm[hidden],#notice[hidden],#slot-section[hidden],#slot-warning[hidden]{display:none}
.warn{color:var(--dead);margin:.2rem 0 .6rem}
article.dead{border:1px solid var(--line);border-left:3px solid var(--dead);border-radius:.4rem;padding:.6rem .8rem;margin:.6rem 0}
article.dead header{display:flex;flex-wrap:wrap;gap:.3rem .8rem;align-items:baseline}
article.dead .key{font-family:ui-monospace,monospace;font-size:.85rem}
article.dead time{color:var(--muted);font-size:.8rem;margin-left:auto}
article.dead .error{color:var(--dead);margin:.3rem 0;white-space:pre-wrap;overflow-wrap:anywhere}
.fields{display:flex;flex-wrap:wrap;gap:.2rem 1.2rem;font-size:.85rem}
.field .label{color:var(--muted);margin-right:.3rem}
.field .value{overflow-wrap:anywhere}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--bg);padding:.5rem;border-radius:.3rem;margin:.4rem 0}
.actions{display:flex;gap:.5rem;margin-top:.4rem}
#confirm{position:fixed;inset:auto 0 0 0;background:var(--card);border-top:2px solid var(--accent);padding:1rem;display:flex;flex-wrap:wrap;gap:.6rem;align-items:center;justify-content:center;box-shadow:0 -4px 16px rgba(0,0,0,.2)}
.notice{padding:.5rem .8rem;border-radius:.4rem;border:1px solid var(--ok);color:var(--ok)}
.notice.error{border-color:var(--dead);color:var(--dead)}
@media (max-width:600px){main{padding:.5rem}section{padding:.6rem}th,td{padding:.3rem}}
`
