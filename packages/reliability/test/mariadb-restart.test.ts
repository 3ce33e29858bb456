// Scenario 7 on MariaDB: the server restarts twice during a drain on mysqlBackend, with producers
// publishing through @outboxkit/mysql in mysql2 transactions. Runs on a DEDICATED server
// (mariadb-install-db into a temp dir, mariadbd on its own port) so the shared server at 3306 and
// the other tests are not disturbed.
import { mysqlBackend } from '@outboxkit/mysql'
import { describe, test } from 'vitest'
import { openLedgerDb } from '../src/ledger-db.js'
import { figuresLine } from '../src/report.js'
import { skippedBecause, useDedicatedServer } from './support/dedicated-server.js'
import { dedicatedMariadbUnavailable, startDedicatedMariadb } from './support/mariadb-server.js'
import { expectRestartsSurvived, restartFigures, restartsDuringDrain } from './support/restart-drain.js'

const unavailable = await skippedBecause('mariadb-restart', dedicatedMariadbUnavailable)

describe.skipIf(unavailable !== undefined)('MariaDB server restart during a drain', () => {
  const dedicated = useDedicatedServer(startDedicatedMariadb, (server) =>
    openLedgerDb({ dialect: 'mysql', url: server.url }, { max: 12 }),
  )

  test('mariadbd restarted twice while producers commit and roll back and a relay drains: lost = 0, phantom = 0, no relay stuck', async () => {
    const server = dedicated.server()
    const r = await restartsDuringDrain({
      name: 'mariadb',
      db: dedicated.opened(),
      backend: mysqlBackend({ uri: server.url, commandTimeoutMs: 5_000, connectionLimit: 4 }),
      restart: () => server.restart(),
      listen: false,
    })
    console.log(figuresLine('server-restart-twice-mariadb', restartFigures(r)))
    expectRestartsSurvived(r)
  }, 150_000)
})
