// Entry of the bench's child processes (run through tsx): one job of jobs.ts per process.
import { serveJob } from './child-entry.js'
import { runJob } from './jobs.js'

await serveJob(runJob)
