// Scenario 8: model-based test. fast-check generates sequences of commands (publish + commit,
// publish + rollback, deliver with handler outcomes, relay crash, lease lapse, backoff passing);
// each runs against the real relay engine on the real PostgreSQL server and is checked, step by
// step, against a small model of every message (state, attempts, due or not).
// Reproduce a failure with MODEL_SEED=<seed> (printed by fast-check); more runs with MODEL_RUNS.
import { pgBackend } from '@outboxkit/pg'
import fc from 'fast-check'
import { afterAll, expect, test } from 'vitest'
import { figuresLine } from '../src/report.js'
import {
  CrashCommand,
  DeliverCommand,
  MAX_ATTEMPTS,
  type Model,
  makeReal,
  type Outcome,
  PublishCommand,
  type Real,
  TimeCommand,
} from './support/model.js'
import { tableSql, World } from './support/world.js'

const w = new World()
afterAll(() => w.close())

const outcome = fc.constantFrom<Outcome>('ok', 'fail', 'retry', 'retryNow', 'cancel')
const commands = [
  fc.tuple(fc.integer({ min: 1, max: 3 }), fc.boolean()).map(([n, rb]) => new PublishCommand(n, rb)),
  fc.array(outcome, { minLength: 1, maxLength: 3 }).map((o) => new DeliverCommand(o)),
  fc.constant(new CrashCommand()),
  fc.constantFrom('lease' as const, 'backoff' as const).map((what) => new TimeCommand(what)),
]

test('the relay engine on PostgreSQL follows the message state model, step by step', async () => {
  const outbox = await w.outbox('model', { notify: false })
  const backend = pgBackend({ pool: w.pool })
  let runs = 0
  let steps = 0
  const kinds: Record<string, number> = {}
  let real: Real | undefined
  const property = fc.asyncProperty(
    fc.commands(commands, { maxCommands: 40, size: 'large' }),
    async (cmds) => {
      runs++
      await real?.relay?.stop({ graceMs: 0 })
      await w.query(`TRUNCATE ${tableSql(outbox)}`)
      real = makeReal(w.pool, outbox, backend)
      const model: Model = { messages: new Map(), nextN: 0 }
      const r = real
      for (const c of cmds) {
        steps++
        const kind = String(c).replace(/\(.*$/, '')
        kinds[kind] = (kinds[kind] ?? 0) + 1
      }
      await fc.asyncModelRun(() => ({ model, real: r }), cmds)
    },
  )
  const seed = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED)
  const t0 = Date.now()
  try {
    await fc.assert(property, {
      numRuns: Number(process.env.MODEL_RUNS ?? 120),
      ...(seed === undefined ? {} : { seed }),
      endOnFailure: false,
    })
  } finally {
    await real?.relay?.stop({ graceMs: 0 })
  }
  console.log(
    figuresLine('model', {
      runs,
      commands: steps,
      ...kinds,
      maxAttempts: MAX_ATTEMPTS,
      seconds: ((Date.now() - t0) / 1000).toFixed(1),
    }),
  )
  expect(runs).toBeGreaterThan(0)
}, 180_000)
