import { appendFileSync } from 'node:fs'

/**
 * Records one bad input and what it got, for the table in docs/reliability.md. When the
 * `BAD_INPUT_TABLE` environment variable names a file, each row is appended to it as Markdown
 * (`| area | input | outcome |`), so the docs can be regenerated from a real run.
 */
export function recordOutcome(area: string, input: string, outcome: string): void {
  const file = process.env.BAD_INPUT_TABLE
  if (!file) return
  const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ')
  appendFileSync(file, `| ${cell(area)} | ${cell(input)} | ${cell(outcome)} |\n`)
}
