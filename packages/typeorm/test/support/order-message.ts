/** The message the schema tests publish through the entity's table: an order with every field set. */
export const ORDER_CREATED = {
  topic: 'order.created',
  payload: { orderId: 'o-1' },
  key: 'o-1',
  headers: { tenant: 't1' },
  dedupKey: 'order-created:o-1',
}

/** The entity row {@link ORDER_CREATED} must read back as, published with id `id` and not yet claimed. */
export function pendingOrderRow(id: string) {
  return {
    id,
    topic: 'order.created',
    key: 'o-1',
    payload: { orderId: 'o-1' },
    headers: { tenant: 't1' },
    state: 'pending',
    attempts: 0,
    dedupKey: 'order-created:o-1',
    lastError: null,
  }
}
