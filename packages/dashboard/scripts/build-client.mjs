// Compiles the page's script (client/types.ts, dom.ts, app.ts) into
// src/page/generated/client-script.ts, a string the server inlines into the page. Run by the
// package's build; a test checks the committed file is what this script makes of the sources.
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { CLIENT_FILES, clientScriptModule } from './client-script.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const sources = CLIENT_FILES.map((f) => readFileSync(`${root}client/${f}`, 'utf8'))
writeFileSync(`${root}src/page/generated/client-script.ts`, clientScriptModule(sources))
