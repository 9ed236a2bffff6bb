import { z } from 'zod';
import { denomination, idOf, metadata, nonNegativeUnits } from './common';

const stateInput = z
  .enum(['pending', 'complete', 'completed'], { error: 'must be one of pending, complete' })
  .transform((s) => (s === 'completed' ? 'complete' : s));

const eventFields = {
  type: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(200),
  cost_override: z.strictObject({ amount: nonNegativeUnits, denomination }).optional(),
  cost_override_amount: nonNegativeUnits.optional(),
  cost_override_denomination: denomination.optional(),
  metadata: metadata.optional(),
  state: stateInput.optional(),
  gate_on_balance: z.boolean({ error: 'must be true or false' }).optional(),
  idempotency_key: z.string().min(1).max(255).optional(),
};

function pairCheck(v: { cost_override?: unknown; cost_override_amount?: unknown; cost_override_denomination?: unknown }, ctx: z.RefinementCtx) {
  const hasAmount = v.cost_override_amount !== undefined;
  const hasDenomination = v.cost_override_denomination !== undefined;
  if (hasAmount !== hasDenomination) {
    ctx.addIssue({
      code: 'custom',
      message: 'cost_override_amount and cost_override_denomination go together: send both or neither.',
      path: [hasAmount ? 'cost_override_denomination' : 'cost_override_amount'],
    });
  }
  if (v.cost_override !== undefined && hasAmount) {
    ctx.addIssue({ code: 'custom', message: 'Send either cost_override or cost_override_amount, not both.', path: ['cost_override'] });
  }
}

/**
 * The two spellings of an override become one: past this edge the domain reads only
 * `cost_override`, so pricing has a single input to look at.
 */
function oneOverride<T extends { cost_override?: { amount: string; denomination: string }; cost_override_amount?: string; cost_override_denomination?: string }>(
  v: T,
): Omit<T, 'cost_override_amount' | 'cost_override_denomination'> {
  const { cost_override_amount: amount, cost_override_denomination: denomination, ...rest } = v;
  return amount !== undefined && denomination !== undefined ? { ...rest, cost_override: { amount, denomination } } : rest;
}

export const eventCreate = z.strictObject(eventFields).superRefine(pairCheck).transform(oneOverride);
export type EventCreate = z.infer<typeof eventCreate>;

export const batchItem = z.strictObject({ ...eventFields, account_id: idOf('a') }).superRefine(pairCheck).transform(oneOverride);
export const eventBatch = z
  .array(batchItem, { error: 'The body must be an array of events.' })
  .min(1, 'Send at least one event.')
  .max(1000, 'A batch holds at most 1000 events.');
export type BatchItem = z.infer<typeof batchItem>;

export const eventTransition = z.strictObject({
  state: z
    .enum(['complete', 'completed', 'cancelled', 'canceled'], { error: 'must be complete or cancelled' })
    .transform((s) => (s === 'completed' ? 'complete' : s === 'canceled' ? 'cancelled' : s)),
});

// Years 0001–9999 in UTC: the database stores no year 0 and no five-digit year, and an offset
// can carry 0001-01-01 or 9999-12-31 across that edge.
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');
export const iso = z.iso
  .datetime({ offset: true, error: 'must be an ISO 8601 timestamp' })
  .refine((v) => {
    const at = Date.parse(v);
    return at >= FIRST_INSTANT && at <= LAST_INSTANT;
  }, 'must lie between the years 0001 and 9999 (UTC)');
export const eventListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000, 'limit must be at most 1000').default(100),
  starting_after: z.string().min(1).optional(),
  account_id: z.string().optional(),
  type: z.string().optional(),
  state: z.enum(['pending', 'complete', 'cancelled', 'rejected'], { error: 'must be one of pending, complete, cancelled, rejected' }).optional(),
  created_gte: iso.optional(),
  created_lt: iso.optional(),
});
export type EventListQuery = z.infer<typeof eventListQuery>;
