import type { Units } from '../../money';

/** One event as the API's body parses into it; a batch item also names its account. */
export type EventInput = {
  type: string;
  /** The caller's price (the API's `cost_override_amount` / `cost_override_denomination` arrive here too). */
  cost_override?: { amount: Units; denomination: string };
  metadata?: Record<string, unknown>;
  state?: 'pending' | 'complete';
  gate_on_balance?: boolean;
  idempotency_key?: string;
};
export type BatchItem = EventInput & { account_id: string };
