/** A promise with its resolve and reject exposed. */
export interface Deferred<T> {
  promise: Promise<T>
  resolve(value: T): void
  reject(error: unknown): void
}

/** Creates a {@link Deferred}. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/**
 * A window of real time in which the test counts what happens (never used to wait for an
 * outcome: outcomes are awaited with events or `waitFor`).
 */
export function observeFor(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
