import type { ProcessOnceFn } from '@outboxkit/core'
import { describe } from 'vitest'
import { registerInboxConcurrencyTests } from './inbox-suite/concurrency.js'
import { registerInboxHandlerTests } from './inbox-suite/handler.js'
import { openInboxSuite } from './inbox-suite/inbox-harness.js'
import { registerOnceTests } from './inbox-suite/once.js'
import { registerInboxRefusalTests } from './inbox-suite/refusals.js'
import type { PublishHarness } from './publish-suite/harness.js'
import { openPublishSuite, type PublishSuite } from './publish-suite/suite.js'

/** Registers the inbox tests on an opened publish suite (used by both entry points). */
export function registerInboxTests<TTx>(suite: PublishSuite<TTx>, processOnce: ProcessOnceFn<TTx>): void {
  describe('inbox (processOnce)', () => {
    const s = openInboxSuite(suite, processOnce)
    registerOnceTests(s)
    registerInboxRefusalTests(s)
    registerInboxConcurrencyTests(s)
    registerInboxHandlerTests(s)
  })
}

/**
 * The inbox conformance suite: `processOnce` of an adapter, asserted through raw SQL on a
 * separate connection. `runPublishConformance` runs it too when its harness has `processOnce`
 * (every adapter's does), on the same context, so every adapter and driver combination that runs
 * the publish suite runs this one.
 */
export function runInboxConformance<TTx>(
  harness: PublishHarness<TTx> & { processOnce: ProcessOnceFn<TTx> },
): void {
  describe(`inbox conformance: ${harness.label ?? harness.name}`, () => {
    registerInboxTests(openPublishSuite(harness), harness.processOnce)
  })
}
