// Where the forwarder gets its channel: the one it was given, or a factory it calls again once
// the channel it made has closed (itself or with its connection), so a broker restart heals
// without restarting the relay. One factory call at a time; a failed call is not remembered.
import { OutboxError } from '@outboxkit/core'
import {
  type AmqpConfirmChannel,
  assertFactoryChannel,
  type ConfirmChannelFactory,
} from './confirm-channel.js'
import { type WatchedChannel, watchChannel } from './watched-channel.js'

/** Gives the forwarder an open channel for each publish. */
export interface ChannelSource {
  /** An open channel, or a rejection saying why there is none. */
  acquire(): Promise<WatchedChannel>
}

/** The source of a channel the user passed: it is used as long as it is open, never replaced. */
export function fixedChannelSource(channel: AmqpConfirmChannel): ChannelSource {
  const watched = watchChannel(channel)
  return {
    acquire() {
      if (!watched.closed) return Promise.resolve(watched)
      return Promise.reject(
        new OutboxError(
          'BROKER',
          'the ConfirmChannel given to rabbitmqForwarder has closed (it, or its connection, was closed). Pass a function that returns a fresh ConfirmChannel instead, so the forwarder opens a new one after a broker restart.',
          { source: 'rabbitmq' },
        ),
      )
    },
  }
}

/** The source of a channel `factory` opens, again once the previous one has closed. */
export function factoryChannelSource(factory: ConfirmChannelFactory): ChannelSource {
  let current: Promise<WatchedChannel> | undefined
  const open = async () => {
    let channel: unknown
    try {
      channel = await factory()
    } catch (cause) {
      throw new OutboxError(
        'BROKER',
        `the channel function of rabbitmqForwarder failed: ${cause instanceof Error ? cause.message : String(cause)}. The relay retries the message, and the next forward calls the function again.`,
        { cause, source: 'rabbitmq' },
      )
    }
    return watchChannel(assertFactoryChannel(channel))
  }
  const start = () => {
    const opening = open()
    current = opening
    opening.catch(() => {
      if (current === opening) current = undefined
    })
    return opening
  }
  return {
    async acquire() {
      const previous = current
      if (previous) {
        const watched = await previous
        if (!watched.closed) return watched
        if (current === previous) current = undefined
      }
      const fresh = await (current ?? start())
      if (!fresh.closed) return fresh
      throw new OutboxError(
        'BROKER',
        'the channel function of rabbitmqForwarder returned a channel that has already closed. The relay retries the message, and the next forward calls the function again.',
        { source: 'rabbitmq' },
      )
    },
  }
}
