import type { Units } from '../../money';

export type BillingRule = { type: string; amount: Units; denomination: string };
export type Cost = { amount: Units; denomination: string } | null;
export type PricedBy = 'override' | 'plan' | 'none';

/** Prices one event: a caller's override wins, then the plan's rule for its type, else unbilled. */
export function computeEventCost(
  input: { type: string; cost_override?: { amount: Units; denomination: string }; cost_override_amount?: Units; cost_override_denomination?: string },
  rules: BillingRule[] | null,
): { cost: Cost; pricedBy: PricedBy } {
  if (input.cost_override) return { cost: { ...input.cost_override }, pricedBy: 'override' };
  if (input.cost_override_amount !== undefined && input.cost_override_denomination !== undefined) {
    return { cost: { amount: input.cost_override_amount, denomination: input.cost_override_denomination }, pricedBy: 'override' };
  }
  const rule = rules?.find((r) => r.type === input.type);
  if (rule) return { cost: { amount: rule.amount, denomination: rule.denomination }, pricedBy: 'plan' };
  return { cost: null, pricedBy: 'none' };
}
