// docs/how-it-works.md and docs/ordering.md show the SQL the code sends: their sql regions are
// rendered from packages/core's statement builders (`pnpm docs:sql`), and this test fails when
// a page and the rendering differ, so a changed statement cannot leave a page behind.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, test } from 'vitest'
import { repoRoot } from '../src/markdown-files.js'
import { renderedStatements, renderSqlRegions, SQL_PAGES, sqlRegions } from '../src/sql-regions.js'

for (const [page, regions] of Object.entries(SQL_PAGES)) {
  test(`${page} shows the SQL the code sends (else run: pnpm docs:sql)`, () => {
    const markdown = readFileSync(join(repoRoot, page), 'utf8')
    expect(sqlRegions(markdown)).toEqual(expect.arrayContaining([...regions]))
    const rendered = renderSqlRegions(markdown)
    expect(markdown, `${page} differs from the SQL the code sends: run pnpm docs:sql`).toBe(rendered)
  })
}

test('an edited line of a region is caught, and an unknown region refused', () => {
  const statements = renderedStatements()
  const page = renderSqlRegions('text\n<!-- sql:claim -->\n<!-- /sql -->\nmore\n')
  expect(page).toContain(statements.claim)
  expect(renderSqlRegions(page)).toBe(page)
  const edited = page.replace('FOR UPDATE SKIP LOCKED', 'FOR UPDATE')
  expect(renderSqlRegions(edited)).not.toBe(edited)
  expect(() => renderSqlRegions('<!-- sql:nope -->\n<!-- /sql -->')).toThrow(/no statement named sql:nope/)
})

test('the rendered statements are the current ones: the settle returns the ids it did not apply', () => {
  const { settle, settleDelivered, ddl } = renderedStatements()
  expect(settle).toMatch(/WHERE s\.id NOT IN \(SELECT id FROM del UNION ALL SELECT id FROM upd\)$/)
  expect(settleDelivered).toMatch(/WHERE s\.id NOT IN \(SELECT id FROM del\)$/)
  expect(ddl).toContain('"outbox_key_seq_idx"')
  expect(ddl).toContain('CREATE SEQUENCE IF NOT EXISTS "outbox_seq_seq"')
})
