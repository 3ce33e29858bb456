import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector'

/**
 * Runs `fn` under the V8 CPU profiler when `file` is set and writes the .cpuprofile there, so a
 * profile covers only the measured section (not module loading).
 */
export async function withProfile<T>(file: string | undefined, fn: () => Promise<T>): Promise<T> {
  if (!file) return fn()
  const session = new Session()
  session.connect()
  const post = (method: string, params?: object) =>
    new Promise<any>((resolve, reject) =>
      session.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))),
    )
  await post('Profiler.enable')
  await post('Profiler.setSamplingInterval', { interval: 200 })
  await post('Profiler.start')
  try {
    return await fn()
  } finally {
    const { profile } = await post('Profiler.stop')
    writeFileSync(file, JSON.stringify(profile))
    session.disconnect()
  }
}
