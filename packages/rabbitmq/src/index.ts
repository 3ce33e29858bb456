export type {
  AmqpConfirmChannel,
  AmqpPublishOptions,
  AmqpReturnedMessage,
  ConfirmChannelFactory,
} from './confirm-channel.js'
export type { RabbitmqForwarderOptions } from './forwarder-options.js'
export { type AmqpInboxMessage, type AmqpMessageLike, amqpInboxMessage } from './inbox-message.js'
export { rabbitmqForwarder } from './rabbitmq-forwarder.js'
