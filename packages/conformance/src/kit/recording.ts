import pg from 'pg'

/**
 * A `pg.Client` class that pushes the text of every statement it is asked to send onto `sent`, so
 * a test can assert what an adapter sent (or that it sent nothing). Give it to a `pg.Pool` as
 * `Client`, or construct it directly.
 */
export function recordingPgClient(sent: string[]): typeof pg.Client {
  return class RecordingClient extends pg.Client {
    override query(...args: unknown[]): any {
      const q = args[0] as string | { text?: string }
      sent.push(typeof q === 'string' ? q : String(q?.text))
      return (super.query as (...a: unknown[]) => unknown)(...args)
    }
  }
}
