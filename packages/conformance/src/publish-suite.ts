import { describe } from 'vitest'
import { registerInboxTests } from './inbox-suite.js'
import { registerBadInputTests } from './publish-suite/bad-input.js'
import { registerConcurrencyTests } from './publish-suite/concurrency.js'
import { registerDedupDelayTests } from './publish-suite/dedup-delay.js'
import { registerEscapedHandleTests } from './publish-suite/escaped-handles.js'
import type { PublishHarness } from './publish-suite/harness.js'
import { registerPayloadTests } from './publish-suite/payloads.js'
import { registerPublishManyTests } from './publish-suite/publish-many.js'
import { registerRefusalTests } from './publish-suite/refusals.js'
import { registerRelayDeliveryTests } from './publish-suite/relay-delivery.js'
import { registerSavepointTests } from './publish-suite/savepoints.js'
import { openPublishSuite } from './publish-suite/suite.js'
import { registerWalTests } from './publish-suite/wal.js'
import { registerWriteTests } from './publish-suite/writes.js'

export type { PublishContext, PublishHarness, RefusedHandle } from './publish-suite/harness.js'

/**
 * The publish conformance suite: every adapter runs it from one small test file. It asserts
 * through raw SQL on a separate connection, never through the adapter under test. The tests are
 * grouped by concern in `publish-suite/`, registered here in their order.
 */
export function runPublishConformance<TTx>(harness: PublishHarness<TTx>): void {
  describe(`publish conformance: ${harness.label ?? harness.name}`, () => {
    const suite = openPublishSuite(harness)
    registerWriteTests(suite)
    registerRefusalTests(suite)
    registerEscapedHandleTests(suite)
    registerSavepointTests(suite)
    registerPublishManyTests(suite)
    registerDedupDelayTests(suite)
    registerPayloadTests(suite)
    registerBadInputTests(suite)
    registerConcurrencyTests(suite)
    registerRelayDeliveryTests(suite)
    registerWalTests(suite)
    if (harness.processOnce) registerInboxTests(suite, harness.processOnce)
  })
}
