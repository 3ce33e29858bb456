// The SQL that docs/how-it-works.md, docs/ordering.md and docs/adapters/postgres-js.md show, rendered from the statement
// builders of packages/core (PostgreSQL, for a default outbox: `defineOutbox()`, table "outbox"),
// into marked regions of the pages:
//
//     <!-- sql:claim -->
//     ```sql
//     ...the statement, as the relay sends it...
//     ```
//     <!-- /sql -->
//
// `pnpm docs:sql` rewrites the regions; test/sql-regions.test.ts fails when a page differs.
import { defineOutbox, outboxDdl } from '@outboxkit/core'
import { POSTGRES_TRANSACTION_MARKER, postgresStatements } from '@outboxkit/core/adapter'

/** The statements a page may show, by region name. */
export function renderedStatements(): Record<string, string> {
  const outbox = defineOutbox()
  const sql = postgresStatements(outbox.table)
  const ddl = outboxDdl(outbox).trimEnd()
  return {
    ddl,
    // The statements of ddl that per-key ordering added (docs/ordering.md#the-table).
    'ddl-ordered': `${ddl
      .split(';\n')
      .filter((s) => /\bseq\b/.test(s))
      .join(';\n')};`,
    publishOne: sql.publishOne,
    publishOnePlain: sql.publishOnePlain,
    transactionMarker: POSTGRES_TRANSACTION_MARKER,
    publishOneGuardedPlain: sql.publishOneGuardedPlain,
    publishManyOrdered: sql.publishManyOrdered,
    claim: sql.claim,
    claimOrdered: sql.claimOrdered,
    settle: sql.settle,
    settleDelivered: sql.settleDelivered,
    extendLease: sql.extendLease,
  }
}

/** The pages with SQL regions, and the regions each must have. */
export const SQL_PAGES: Readonly<Record<string, readonly string[]>> = {
  'docs/how-it-works.md': [
    'ddl',
    'publishOne',
    'publishOnePlain',
    'claim',
    'settle',
    'settleDelivered',
    'extendLease',
  ],
  'docs/ordering.md': ['publishManyOrdered', 'claimOrdered', 'ddl-ordered'],
  'docs/adapters/postgres-js.md': ['transactionMarker', 'publishOneGuardedPlain'],
}

const REGION = /<!-- sql:([\w-]+) -->\n[\s\S]*?<!-- \/sql -->/g

/** The names of the SQL regions of `markdown`, in page order. */
export function sqlRegions(markdown: string): string[] {
  return [...markdown.matchAll(REGION)].map((m) => m[1]!)
}

/** `markdown` with every SQL region holding the rendered statement; throws on an unknown region. */
export function renderSqlRegions(markdown: string, statements = renderedStatements()): string {
  return markdown.replace(REGION, (_, name: string) => {
    const text = statements[name]
    if (text === undefined) {
      throw new Error(
        `[outboxkit] [docs] no statement named sql:${name}: use one of ${Object.keys(statements).join(', ')}`,
      )
    }
    return `<!-- sql:${name} -->\n\`\`\`sql\n${text}\n\`\`\`\n<!-- /sql -->`
  })
}
