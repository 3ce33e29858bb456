// Entry of the backends scenario's relay processes: only its drain job, so that it can be bundled
// to plain JavaScript (see bundle.ts) and start in a fraction of the time tsx takes on each run.
import { serveJob } from '../child-entry.js'
import { type BackendsJobSpec, runBackendsJob } from './backends-job.js'

await serveJob((job: { kind: 'backends'; spec: BackendsJobSpec }, progress) =>
  runBackendsJob(job.spec, progress),
)
