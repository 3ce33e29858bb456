export type { JetStreamForwarderOptions, SubjectOption } from './forwarder-options.js'
export { DEFAULT_TIMEOUT_MS } from './forwarder-options.js'
export { jetStreamInboxMessage, type NatsInboxMessage, type NatsMessageLike } from './inbox-message.js'
export type {
  JetStreamForwardPublishOptions,
  JetStreamPubAck,
  JetStreamPublisher,
} from './jetstream-client.js'
export { jetStreamForwarder } from './jetstream-forwarder.js'
