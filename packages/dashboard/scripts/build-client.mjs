// Compiles the page's script (client/app.ts) into src/page/generated/client-script.ts, a string
// the server inlines into the page. Run by the package's build; a test checks the committed file
// is what this script produces from the current client/app.ts.
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { clientScriptModule } from './client-script.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const source = readFileSync(`${root}client/app.ts`, 'utf8')
writeFileSync(`${root}src/page/generated/client-script.ts`, clientScriptModule(source))
