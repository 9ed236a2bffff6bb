import { Decimal, type Units } from '../../money';

/**
 * A plan's rate card: the pure definition of how a plan prices an event from its type, its
 * `properties` and its `quantities`. The database says the same rules in one SQL form
 * (`rateCardPrice` in pricing.ts, on the functions of drizzle/0031_usage_functions.sql), which the single-event statement and the batch
 * pricing both call; `rate-card.property.test.ts` holds the two to one answer on both databases.
 *
 * - The first rule of the event's type, in plan order, whose `filters` all match prices the
 *   event (a filter is a value or a list of values; a missing property matches nothing).
 * - Cost = the rule's `amount` (default 0) + Σ components, each rounded half up to 12 decimals.
 * - unit: q × unit_amount. package: ceil(q / size) × amount. volume: q × the unit_amount of the
 *   tier q reaches, plus that tier's flat_amount (a quantity of 0 costs nothing). graduated: each
 *   unit priced at the tier it falls in, counting from `used` (the account's quantity of that rule
 *   and component since the plan period began); a tier's flat_amount is charged once, when the
 *   count first enters it.
 * - A quantity the event does not carry is 0.
 */

export type PropertyValue = string | number | boolean;
export type Tier = { up_to: Units | null; unit_amount: Units; flat_amount?: Units };
export type Component =
  | { quantity: string; unit_amount: Units }
  | { quantity: string; tiers: Tier[]; tiers_mode: 'graduated' | 'volume' }
  | { quantity: string; package: { size: Units; amount: Units } };
export type BillingRule = {
  type: string;
  denomination: string;
  amount?: Units;
  filters?: Record<string, PropertyValue | PropertyValue[]>;
  components?: Component[];
};
export type Quantities = Record<string, Units>;
export type Properties = Record<string, PropertyValue>;

/** What a rule charged: the rule's index in the plan, the total, and each component's quantity and amount. */
export type RulePrice = { rule: number; denomination: string; amount: Units; components: { quantity: Units; amount: Units }[]; graduated: boolean };

/** The key of a graduated counter: the rule's index and the component's, as `used` is keyed. */
export const counterKey = (rule: number, component: number) => `${rule}.${component}`;

const D = (v: Units | number) => new Decimal(v);
const round12 = (d: Decimal) => d.toDecimalPlaces(12, Decimal.ROUND_HALF_UP);

function sameValue(a: PropertyValue, b: PropertyValue): boolean {
  if (typeof a === 'number' && typeof b === 'number') return D(a).eq(D(b));
  return typeof a === typeof b && a === b;
}

/** The index of the rule that prices an event of `type` with `properties`, or null. */
export function matchRule(rules: readonly BillingRule[], type: string, properties: Properties): number | null {
  for (const [i, r] of rules.entries()) {
    if (r.type !== type) continue;
    const ok = Object.entries(r.filters ?? {}).every(([k, want]) => {
      if (!Object.hasOwn(properties, k)) return false;
      const got = properties[k];
      return Array.isArray(want) ? want.some((w) => sameValue(w, got)) : sameValue(want, got);
    });
    if (ok) return i;
  }
  return null;
}

/** Σ over graduated tiers of what a count of `x` units costs from zero (flat amounts once each tier is entered). */
function graduatedTotal(tiers: readonly Tier[], x: Decimal): Decimal {
  let total = D(0);
  let lower = D(0);
  for (const t of tiers) {
    const upper = t.up_to === null ? null : D(t.up_to);
    if (x.lte(lower)) break;
    const top = upper === null || x.lt(upper) ? x : upper;
    total = total.plus(top.minus(lower).times(t.unit_amount));
    if (t.flat_amount) total = total.plus(t.flat_amount);
    if (upper === null) break;
    lower = upper;
  }
  return total;
}

export function isGraduated(c: Component): boolean {
  return 'tiers' in c && c.tiers_mode === 'graduated';
}

/** One component's amount for quantity `q`, counting from `used` (graduated only). Exact, before rounding. */
function componentAmount(c: Component, q: Decimal, used: Decimal): Decimal {
  if ('unit_amount' in c) return q.times(c.unit_amount);
  if ('package' in c) {
    const size = D(c.package.size);
    const rest = q.mod(size);
    const packs = q.minus(rest).div(size).plus(rest.isZero() ? 0 : 1);
    return packs.times(c.package.amount);
  }
  if (c.tiers_mode === 'graduated') return graduatedTotal(c.tiers, used.plus(q)).minus(graduatedTotal(c.tiers, used));
  if (q.isZero()) return D(0);
  const tier = c.tiers.find((t) => t.up_to === null || q.lte(t.up_to)) ?? c.tiers[c.tiers.length - 1];
  return q.times(tier.unit_amount).plus(tier.flat_amount ?? 0);
}

/** Prices rule `index` of `rules` for `quantities`; `used` maps `counterKey(rule, component)` to the count so far. */
export function priceRule(rules: readonly BillingRule[], index: number, quantities: Quantities, used: Record<string, Units> = {}): RulePrice {
  const rule = rules[index];
  const components = (rule.components ?? []).map((c, j) => {
    const q = D(quantities[c.quantity] ?? '0');
    const amount = round12(componentAmount(c, q, D(used[counterKey(index, j)] ?? '0')));
    return { quantity: q.toFixed(), amount: amount.toFixed() };
  });
  const amount = components.reduce((s, c) => s.plus(c.amount), D(rule.amount ?? '0'));
  return { rule: index, denomination: rule.denomination, amount: amount.toFixed(), components, graduated: (rule.components ?? []).some(isGraduated) };
}

/** Prices an event by a plan's rules; null when no rule prices it. */
export function priceEvent(rules: readonly BillingRule[], type: string, quantities: Quantities, properties: Properties, used: Record<string, Units> = {}): RulePrice | null {
  const index = matchRule(rules, type, properties);
  return index === null ? null : priceRule(rules, index, quantities, used);
}

/** The graduated quantities a completed event adds to its account's counters: `counterKey` → quantity. */
export function graduatedUsage(rules: readonly BillingRule[], index: number, quantities: Quantities): Record<string, Units> {
  const out: Record<string, Units> = {};
  (rules[index]?.components ?? []).forEach((c, j) => {
    if (isGraduated(c)) out[counterKey(index, j)] = D(quantities[c.quantity] ?? '0').toFixed();
  });
  return out;
}
