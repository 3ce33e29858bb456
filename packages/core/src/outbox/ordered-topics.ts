import type { OrderedTopicOptions, TopicSchemas } from './define-outbox.js'
import { OutboxError } from './errors.js'
import { formatValue } from './format-value.js'
import { assertKnownOptions, isPlainObject } from './options.js'

/** Every field of an {@link OrderedTopicOptions} entry. */
const ORDERED_TOPIC_OPTIONS = [
  'topic',
  'onDeadLetter',
] as const satisfies readonly (keyof OrderedTopicOptions)[]

/**
 * Validates `defineOutbox`'s `orderedTopics` (names, or `{ topic, onDeadLetter }`) against the
 * outbox's topics: the ordered topics, and those whose dead letter does not block their key.
 * Throws `INVALID_CONFIG` naming the bad entry.
 */
export function parseOrderedTopics(
  list: unknown,
  topics: TopicSchemas | undefined,
): { ordered: ReadonlySet<string>; continues: ReadonlySet<string> } {
  const ordered = new Set<string>()
  const continues = new Set<string>()
  if (list === undefined) return { ordered, continues }
  const bad = (what: string) =>
    new OutboxError(
      'INVALID_CONFIG',
      `orderedTopics ${what}. Give topic names, or { topic, onDeadLetter: 'block' | 'continue' }.`,
    )
  if (!Array.isArray(list)) throw bad(`must be an array, got ${formatValue(list)}`)
  const policy = new Map<string, 'block' | 'continue'>()
  for (const entry of list as unknown[]) {
    const spec = typeof entry === 'string' ? { topic: entry } : (entry as OrderedTopicOptions | null)
    if (!isPlainObject(spec) || typeof spec.topic !== 'string' || spec.topic.length === 0) {
      throw bad(`has an invalid entry: ${formatValue(entry)}`)
    }
    assertKnownOptions(spec, ORDERED_TOPIC_OPTIONS, { source: 'core', what: 'an orderedTopics entry' })
    const onDead = spec.onDeadLetter ?? 'block'
    if (onDead !== 'block' && onDead !== 'continue') {
      throw bad(
        `[${JSON.stringify(spec.topic)}].onDeadLetter must be 'block' or 'continue', got ${formatValue(onDead)}`,
      )
    }
    if (topics && !Object.hasOwn(topics, spec.topic)) {
      throw bad(`names ${JSON.stringify(spec.topic)}, which is not one of this outbox's topics`)
    }
    const before = policy.get(spec.topic)
    if (before !== undefined && before !== onDead) {
      throw bad(`gives ${JSON.stringify(spec.topic)} twice, with onDeadLetter '${before}' and '${onDead}'`)
    }
    policy.set(spec.topic, onDead)
    ordered.add(spec.topic)
    if (onDead === 'continue') continues.add(spec.topic)
  }
  return { ordered, continues }
}
