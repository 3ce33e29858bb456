import { describe, expect, test } from 'vitest'
import { isOutboxError } from '../../src/index.js'
import { RelayLifecycle } from '../../src/relay/lifecycle.js'

describe('RelayLifecycle', () => {
  test('created -> running -> stopping -> stopped -> running again', async () => {
    const life = new RelayLifecycle()
    expect(life.state).toBe('created')
    expect(life.toRunning()).toBe(true)
    expect(life.toRunning()).toBe(false)
    let finish!: () => void
    const stop = life.toStopping(() => new Promise<void>((r) => (finish = r)))
    expect([life.state, life.running]).toEqual(['stopping', false])
    expect(life.toStopping(async () => {})).toBe(stop)
    expect(() => life.toRunning()).toThrow(expect.objectContaining({ code: 'RELAY_STATE' }))
    finish()
    await stop
    expect([life.state, life.stopping]).toEqual(['stopped', undefined])
    expect(life.toRunning()).toBe(true)
  })

  test('a stop that fails still ends in stopped', async () => {
    const life = new RelayLifecycle()
    const err = await life
      .toStopping(async () => {
        throw new Error('close failed')
      })
      .catch((e) => e)
    expect(err.message).toBe('close failed')
    expect(life.state).toBe('stopped')
    expect(isOutboxError(err)).toBe(false)
  })
})
