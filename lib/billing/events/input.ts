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
  /** Usage the caller measured (name → decimal ≥ 0), priced by the plan's rate card. */
  quantities?: Record<string, Units>;
  /** Facts about the event the rate card's filters match on. */
  properties?: Record<string, string | number | boolean>;
  /** A hold's life in seconds (default one hour). */
  expires_in?: number;
};
export type BatchItem = EventInput & { account_id: string };
