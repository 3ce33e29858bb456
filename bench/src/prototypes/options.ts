// PROTOTYPE: the combined switches measured as "all" (see bench/results/prototypes*.md).
import type { ProtoOptions } from './relay.js'

/** Every prototype change to the relay loop (without adaptive wake). */
export const PROTO_ALL: ProtoOptions = {
  minClaimFraction: 0.5,
  releaseOnHandlerEnd: true,
  lazySignal: true,
  batchLeaseTimer: true,
}

/** The prototype relay row of the main bench's drain (scenario 1). */
export const PROTO_DRAIN = {
  relay: { concurrency: 200, batchSize: 200 },
  proto: PROTO_ALL,
  fastSettle: true,
}

/** How the prototype drain row is described in the results. */
export const PROTO_DRAIN_LABEL =
  'concurrency 200, batchSize 200, slot freed at handler end, claims ≥ half a batch, lazy AbortSignal, one lease timer per batch, id = ANY(ARRAY(...)) claim, single-DELETE settle'
