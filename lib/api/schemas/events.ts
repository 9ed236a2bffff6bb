import { z } from 'zod';
import { denomination, idOf, metadata, nonNegativeUnits } from './common';
import { expiresIn, properties, quantities } from './usage';

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
  quantity: nonNegativeUnits.optional(),
  quantities: quantities.optional().describe('Usage measured: name → decimal ≥ 0, at most 10 names; the rate card prices these. `quantity: n` is short for `{ "quantity": n }`.'),
  properties: properties.optional().describe('Facts about the event (flat: string, number or boolean values, at most 20 keys) that billing rule filters match on; `properties[key]=value` filters the event list.'),
  expires_in: expiresIn.optional().describe('A hold\'s life in seconds, 60 to 604800 (default 3600); only with state pending.'),
};

function pairCheck(
  v: { cost_override?: unknown; cost_override_amount?: unknown; cost_override_denomination?: unknown; quantity?: unknown; quantities?: unknown; expires_in?: unknown; state?: string },
  ctx: z.RefinementCtx,
) {
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
  if (v.quantity !== undefined && v.quantities !== undefined) {
    ctx.addIssue({ code: 'custom', message: 'quantity is short for quantities: {"quantity": n}; send one of them.', path: ['quantity'] });
  }
  if (v.expires_in !== undefined && v.state !== 'pending') {
    ctx.addIssue({ code: 'custom', message: 'expires_in is the life of a hold: it goes with state: pending.', path: ['expires_in'] });
  }
}

/**
 * The two spellings of an override become one: past this edge the domain reads only
 * `cost_override`, so pricing has a single input to look at.
 */
function oneOverride<
  T extends { cost_override?: { amount: string; denomination: string }; cost_override_amount?: string; cost_override_denomination?: string; quantity?: string; quantities?: Record<string, string> },
>(v: T): Omit<T, 'cost_override_amount' | 'cost_override_denomination' | 'quantity'> {
  const { cost_override_amount: amount, cost_override_denomination: denomination, quantity, ...rest } = v;
  // `quantity: n` is short for `quantities: { quantity: n }`.
  const withQuantities = quantity !== undefined ? { ...rest, quantities: { quantity } } : rest;
  return amount !== undefined && denomination !== undefined ? { ...withQuantities, cost_override: { amount, denomination } } : withQuantities;
}

export const eventCreate = z.strictObject(eventFields).superRefine(pairCheck).transform(oneOverride);
export type EventCreate = z.infer<typeof eventCreate>;

export const batchItem = z.strictObject({ ...eventFields, account_id: idOf('a') }).superRefine(pairCheck).transform(oneOverride);
export const eventBatch = z
  .array(batchItem, { error: 'The body must be an array of events.' })
  .min(1, 'Send at least one event.')
  .max(1000, 'A batch holds at most 1000 events.');
export type BatchItem = z.infer<typeof batchItem>;

export const eventTransition = z
  .strictObject({
    state: z
      .enum(['complete', 'completed', 'cancelled', 'canceled'], { error: 'must be complete or cancelled' })
      .transform((s): 'complete' | 'cancelled' => (s === 'completed' ? 'complete' : s === 'canceled' ? 'cancelled' : s))
      .optional(),
    // The actual usage a hold settles at: a cost in the held denomination, or quantities priced by the same rule.
    cost_override_amount: nonNegativeUnits.optional(),
    quantity: nonNegativeUnits.optional(),
    quantities: quantities.optional().describe('The actual usage of a hold being completed, priced by the rule that priced the hold.'),
    overage_behavior: z
      .enum(['allow', 'cap', 'reject'], { error: 'must be one of allow, cap, reject' })
      .optional()
      .describe('When the actual costs more than was held: allow (default; may go below zero), cap (at most the held cost plus what is available), reject (409 insufficient_balance; the hold stays pending).'),
    expires_in: expiresIn.optional().describe('Sent alone on a pending event: its hold now lasts this many seconds from now (60 to 604800).'),
  })
  .superRefine((v, ctx) => {
    if (v.state === undefined && v.expires_in === undefined) ctx.addIssue({ code: 'custom', message: 'Send state (complete or cancelled), or expires_in to extend a hold.', path: ['state'] });
    if (v.state !== undefined && v.expires_in !== undefined) ctx.addIssue({ code: 'custom', message: 'expires_in extends a pending hold; send it without state.', path: ['expires_in'] });
    const actual = (['cost_override_amount', 'quantity', 'quantities'] as const).filter((k) => v[k] !== undefined);
    if (actual.length > 1) ctx.addIssue({ code: 'custom', message: 'Send the actual usage once: cost_override_amount, or quantities (quantity is short for it).', path: [actual[1]] });
    for (const k of [...actual, ...(v.overage_behavior !== undefined ? (['overage_behavior'] as const) : [])]) {
      if (v.state !== 'complete') ctx.addIssue({ code: 'custom', message: `${k} goes with state: complete.`, path: [k] });
    }
  })
  .transform(({ quantity, ...v }) => (quantity !== undefined ? { ...v, quantities: { quantity } } : v));
export type EventTransition = z.infer<typeof eventTransition>;

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
  // properties[key]=value (the query parse gathers them into this object).
  properties: z.record(z.string(), z.string()).optional().describe('properties[key]=value: events whose property key has that value (numbers and booleans as JSON writes them).'),
});
export type EventListQuery = z.infer<typeof eventListQuery>;
