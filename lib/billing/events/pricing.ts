import type { Units } from '../../money';

export type BillingRule = { type: string; amount: Units; denomination: string };
export type Cost = { amount: Units; denomination: string } | null;
export type PricedBy = 'override' | 'plan' | 'none';

/** Prices one event: a caller's override wins, then the plan's rule for its type, else unbilled. */
export function computeEventCost(
  input: { type: string; cost_override?: { amount: Units; denomination: string } },
  rules: BillingRule[] | null,
): { cost: Cost; pricedBy: PricedBy } {
  if (input.cost_override) return { cost: { ...input.cost_override }, pricedBy: 'override' };
  const rule = rules?.find((r) => r.type === input.type);
  if (rule) return { cost: { amount: rule.amount, denomination: rule.denomination }, pricedBy: 'plan' };
  return { cost: null, pricedBy: 'none' };
}
