// Entry of the memory scenario's relay process: only the outboxkit drain, so that it can be
// bundled to plain JavaScript (see bundle.ts) and measured without tsx in the process.
import { serveJob } from './child-entry.js'
import { drainOutboxkit } from './contenders/outboxkit.js'

await serveJob(drainOutboxkit)
