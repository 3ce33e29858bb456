import { describe } from 'vitest'
import { registerClaimTests } from './backend-suite/claim.js'
import { registerExpiredLeaseTests } from './backend-suite/expired-leases.js'
import { registerExtendLeaseTests } from './backend-suite/extend-lease.js'
import { registerFencingTests } from './backend-suite/fencing.js'
import type { BackendHarness } from './backend-suite/harness.js'
import { registerListenTests } from './backend-suite/listen.js'
import { registerMigrateTests } from './backend-suite/migrate.js'
import { registerPurgeRedriveTests } from './backend-suite/purge-redrive.js'
import { registerSettleTests } from './backend-suite/settle.js'
import { openBackendSuite } from './backend-suite/suite.js'
import { registerWalBackendTests } from './backend-suite/wal.js'

export type { BackendContext, BackendHarness } from './backend-suite/harness.js'

/**
 * The backend conformance suite: the MUST rules of `OutboxBackend` (disjoint claims, lease,
 * attempts at claim, dead-letter at claim, fenced settles, purge, redrive, listen), asserted
 * through raw SQL. The tests are grouped by concern in `backend-suite/`, registered here in
 * their order.
 */
export function runBackendConformance(harness: BackendHarness): void {
  describe(`backend conformance: ${harness.name}`, () => {
    const suite = openBackendSuite(harness)
    registerMigrateTests(suite)
    registerClaimTests(suite)
    registerExpiredLeaseTests(suite)
    registerSettleTests(suite)
    registerFencingTests(suite)
    registerExtendLeaseTests(suite)
    registerPurgeRedriveTests(suite)
    registerListenTests(suite)
    registerWalBackendTests(suite)
  })
}
