import type { DatabaseTarget } from './database-url.js'

/** The messages and codes of `error` and of its causes, outermost first. */
function chain(error: unknown): { text: string; codes: string[] } {
  const texts: string[] = []
  const codes: string[] = []
  let current: unknown = error
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const e = current as { message?: unknown; code?: unknown; cause?: unknown }
    texts.push(typeof e.message === 'string' ? e.message : String(current))
    if (typeof e.code === 'string') codes.push(e.code)
    current = e.cause
  }
  return { text: texts.join('\n'), codes }
}

const SERVER_UNREACHABLE =
  /ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|timeout|timed out|PROTOCOL_CONNECTION_LOST/i
const LOGIN_REFUSED =
  /password authentication failed|role "[^"]*" does not exist|database "[^"]*" does not exist|Access denied for user|Unknown database/i

const SERVER_NAME = { postgres: 'PostgreSQL', mysql: 'the MySQL/MariaDB server' } as const

/**
 * One line that tells the operator what to do about an operational failure of a command (exit
 * code 1), or `undefined` when there is nothing better to say than the error itself:
 * - SQLite given `schema.table`: the CLI attaches no database, so only a plain name works;
 * - the table does not exist (PostgreSQL, MySQL/MariaDB and SQLite wording): run `migrate`;
 * - the server refuses the login (user, password, database name): check them in `DATABASE_URL`;
 * - the server is unreachable or does not answer: check `DATABASE_URL`, naming the database;
 * - SQLite: the file is missing or unreadable, is not a database, or better-sqlite3's native
 *   addon did not load.
 */
export function failureHint(
  error: unknown,
  target: DatabaseTarget | undefined,
  table: string,
): string | undefined {
  const { text, codes } = chain(error)
  const schema = table.includes('.') ? table.slice(0, table.indexOf('.')) : undefined
  if (
    target?.dialect === 'sqlite' &&
    schema !== undefined &&
    schema !== 'main' &&
    /no such table|unknown database/i.test(text)
  ) {
    return `On SQLite, --table takes a plain table name: ${JSON.stringify(schema)} would be an attached database, and the CLI attaches none.`
  }
  if (
    /relation .* does not exist|Table '[^']*' doesn't exist|no such table/i.test(text) ||
    codes.includes('ER_NO_SUCH_TABLE')
  ) {
    return `The table does not exist: create it with \`outboxkit migrate --table ${table}\`.`
  }
  if (target?.dialect === 'sqlite') {
    if (
      /NODE_MODULE_VERSION|bindings file|better_sqlite3\.node|compiled against a different Node/i.test(text)
    ) {
      return "better-sqlite3's native addon did not load in this Node.js: rebuild it (npm rebuild better-sqlite3)."
    }
    if (
      codes.some((c) => c.startsWith('SQLITE_CANTOPEN')) ||
      /unable to open database file|directory does not exist/i.test(text)
    ) {
      return `Check DATABASE_URL: the SQLite file ${target.filename} must exist and be readable and writable (\`outboxkit migrate\` creates it).`
    }
    if (codes.includes('SQLITE_NOTADB') || /file is not a database/i.test(text)) {
      return `Check DATABASE_URL: ${target.filename} is not a SQLite database.`
    }
    return undefined
  }
  if (LOGIN_REFUSED.test(text)) {
    return `The server refused the login: check the user, password and database name in DATABASE_URL.`
  }
  if (SERVER_UNREACHABLE.test(text)) {
    return `Check DATABASE_URL and that ${target ? SERVER_NAME[target.dialect] : 'the database'} is reachable from here.`
  }
  return undefined
}
