// Entry of the comparison's child processes, bundled once per build (see builds.ts).
import { serveJob } from '../child-entry.js'
import { runCompareJob } from './jobs.js'

await serveJob(runCompareJob)
