import { z } from 'zod';
import { billingRule, properties as propertiesSchema, quantities as quantitiesSchema, usageName } from '../api/schemas/usage';
import { describeIssue, parseOptions } from '../api/zod-errors';
import { priceEvent, type BillingRule, type PropertyValue, type RulePrice } from '../billing/events/rate-card';

/**
 * The plan form's rate card, as the console edits it: every field as typed (strings), named in the
 * form by the API's own paths (`billing_rules[0].components[1].tiers[2].up_to`), so an error the
 * API's schema reports lands on the field that caused it. Pure: the server action reads the
 * submitted form with it, and the form's price preview runs it in the browser, where the rules are
 * parsed by the same schema and priced by the same rate card (lib/billing/events/rate-card.ts).
 */

export type PriceKind = 'unit' | 'package' | 'graduated' | 'volume';
export const PRICE_KINDS: { value: PriceKind; label: string }[] = [
  { value: 'unit', label: 'Per unit' },
  { value: 'package', label: 'Per package' },
  { value: 'graduated', label: 'Graduated tiers' },
  { value: 'volume', label: 'Volume tiers' },
];
export type ValueKind = 'text' | 'number' | 'boolean';
export const VALUE_KINDS: { value: ValueKind; label: string }[] = [
  { value: 'text', label: 'Text' },
  { value: 'number', label: 'Number' },
  { value: 'boolean', label: 'true or false' },
];

export type TierRow = { up_to?: string; unit_amount?: string; flat_amount?: string };
export type ComponentRow = { quantity?: string; price?: string; unit_amount?: string; package?: { size?: string; amount?: string }; tiers?: TierRow[] };
export type FilterRow = { key?: string; value?: string; kind?: string };
export type RuleRow = { type?: string; amount?: string; denomination?: string; filters?: FilterRow[]; components?: ComponentRow[] };

export type FieldError = { param: string | null; message: string };

const blank = (v: string | undefined) => (v ?? '').trim() === '';
const text = (v: string | undefined) => (v ?? '').trim();

/** A row nobody filled in (the form starts with one): left out, as the API caller would leave it out. */
export function untouchedRule(r: RuleRow): boolean {
  return blank(r.type) && blank(r.amount) && blank(r.denomination) && !r.filters?.length && !r.components?.length;
}

function componentInput(c: ComponentRow, at: string, errors: FieldError[]): Record<string, unknown> {
  const base = { quantity: text(c.quantity) };
  const kind = text(c.price) || 'unit';
  if (kind === 'unit') return { ...base, unit_amount: text(c.unit_amount) };
  if (kind === 'package') return { ...base, package: { size: text(c.package?.size), amount: text(c.package?.amount) } };
  if (kind === 'graduated' || kind === 'volume') {
    return {
      ...base,
      tiers_mode: kind,
      // An empty "up to" is no upper bound: the API's null, allowed on the last tier only.
      tiers: (c.tiers ?? []).map((t) => ({ up_to: blank(t.up_to) ? null : text(t.up_to), unit_amount: text(t.unit_amount), ...(!blank(t.flat_amount) && { flat_amount: text(t.flat_amount) }) })),
    };
  }
  errors.push({ param: `${at}.price`, message: 'Choose per unit, per package, graduated tiers or volume tiers.' });
  return base;
}

/** A filter's value as the event's property would carry it: text, a number or a boolean. */
function filterValue(f: FilterRow, at: string, errors: FieldError[]): PropertyValue | undefined {
  const v = text(f.value);
  const kind = text(f.kind) || 'text';
  if (kind === 'number') {
    if (/^-?\d+(\.\d+)?$/.test(v) && Number.isFinite(Number(v))) return Number(v);
    errors.push({ param: `${at}.value`, message: 'Enter a number, such as 4 or 0.5.' });
    return undefined;
  }
  if (kind === 'boolean') {
    if (v === 'true' || v === 'false') return v === 'true';
    errors.push({ param: `${at}.value`, message: 'Enter true or false.' });
    return undefined;
  }
  if (kind === 'text') return v;
  errors.push({ param: `${at}.kind`, message: 'Choose text, number or true or false.' });
  return undefined;
}

function ruleInput(r: RuleRow, at: string, errors: FieldError[]): Record<string, unknown> {
  const components = r.components ?? [];
  const out: Record<string, unknown> = { type: text(r.type), denomination: text(r.denomination) };
  // The amount per event defaults to 0 in the API; a flat rule (no components) still asks for it.
  if (!blank(r.amount) || components.length === 0) out.amount = text(r.amount);
  if (r.filters?.length) {
    const filters: Record<string, PropertyValue> = {};
    r.filters.forEach((f, k) => {
      const fat = `${at}.filters[${k}]`;
      const key = text(f.key);
      const name = usageName.safeParse(key);
      if (!name.success) errors.push({ param: `${fat}.key`, message: name.error.issues[0].message });
      else if (Object.hasOwn(filters, key)) errors.push({ param: `${fat}.key`, message: 'Each property may be tested once per rule.' });
      const value = filterValue(f, fat, errors);
      if (name.success && value !== undefined) filters[key] = value;
    });
    out.filters = filters;
  }
  if (components.length) out.components = components.map((c, j) => componentInput(c, `${at}.components[${j}]`, errors));
  return out;
}

/**
 * The rate card's rows as the API's `billing_rules`, with the form's row number of each rule (an
 * untouched row is left out) and the errors only the form can make (a filter's key or value).
 */
export function rateCardInput(rows: RuleRow[]): { input: Record<string, unknown>[]; original: number[]; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const input: Record<string, unknown>[] = [];
  const original: number[] = [];
  rows.forEach((r, i) => {
    if (untouchedRule(r)) return;
    original.push(i);
    input.push(ruleInput(r, `billing_rules[${i}]`, errors));
  });
  return { input, original, errors };
}

/**
 * Where an error about the API's `billing_rules[i]...` belongs in the form: the form's row
 * (untouched rows are not sent), and a filter's value field for `filters.<property>`.
 */
export function rateCardParam(param: string | null, rows: RuleRow[], original: number[]): string | null {
  const m = param?.match(/^billing_rules\[(\d+)\](.*)$/);
  if (!param || !m) return param;
  const i = original[Number(m[1])] ?? Number(m[1]);
  const rest = m[2];
  const f = rest.match(/^\.filters\.([^.[\]]+)/);
  if (f) {
    const k = (rows[i]?.filters ?? []).findIndex((x) => text(x.key) === f[1]);
    if (k >= 0) return `billing_rules[${i}].filters[${k}].value`;
    return `billing_rules[${i}].filters`;
  }
  return `billing_rules[${i}]${rest}`;
}

/** Reads the rate card's rows from a submitted form, each index where the form put it. */
export function rateCardRows(fd: FormData): RuleRow[] {
  const root: { billing_rules?: unknown[] } = {};
  for (const [key, raw] of fd.entries()) {
    if (typeof raw !== 'string' || !key.startsWith('billing_rules[')) continue;
    const path = key.match(/[^.[\]]+/g) ?? [];
    // Only the editor's own names: rule, filter, component, tier and package fields.
    if (!/^billing_rules(\[\d{1,3}\]\.(type|amount|denomination|filters\[\d{1,3}\]\.(key|value|kind)|components\[\d{1,3}\]\.(quantity|price|unit_amount|package\.(size|amount)|tiers\[\d{1,3}\]\.(up_to|unit_amount|flat_amount))))$/.test(key)) continue;
    let node: Record<string | number, unknown> = root as Record<string, unknown>;
    path.forEach((part, n) => {
      const last = n === path.length - 1;
      const index = /^\d+$/.test(part) ? Number(part) : part;
      if (last) node[index] = raw;
      else {
        if (!Object.hasOwn(node, index)) node[index] = /^\d+$/.test(path[n + 1]) ? [] : {};
        node = node[index] as Record<string | number, unknown>;
      }
    });
  }
  // A hole (a name the editor never makes) becomes an empty row, so indices stay where they were.
  const fill = (v: unknown): unknown =>
    Array.isArray(v) ? Array.from(v, (x) => (x === undefined ? {} : fill(x))) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)])) : v;
  return (fill(root.billing_rules ?? []) as RuleRow[]);
}

const rulesSchema = z.array(billingRule);

/** The rate card parsed by the API's schema: the rules as the plan would store them, or every error on its field. */
export function parseRateCard(rows: RuleRow[]): { rules: BillingRule[]; errors: FieldError[] } {
  const { input, original, errors } = rateCardInput(rows);
  const result = rulesSchema.safeParse(input, parseOptions);
  const all = [...errors];
  if (!result.success) {
    for (const issue of result.error.issues) {
      const e = describeIssue(issue, ['billing_rules']);
      const param = rateCardParam(e.param, rows, original);
      all.push({ param, message: e.param && param && e.message.startsWith(e.param) ? param + e.message.slice(e.param.length) : e.message });
    }
  }
  return { rules: result.success ? (result.data as BillingRule[]) : [], errors: all };
}

export type SampleEvent = { type: string; quantities: { name: string; value: string }[]; properties: FilterRow[] };

export type Preview =
  | { status: 'invalid'; errors: FieldError[] }
  | { status: 'unpriced' }
  | { status: 'priced'; price: RulePrice; rule: number; quantityNames: string[]; baseAmount: string };

/**
 * What the sample event would cost on the rate card being edited: the rules parsed by the API's
 * schema, the event's quantities and properties by the event's, then priced by the plan's rate
 * card as if the account had used nothing yet this period (graduated tiers start from zero).
 */
export function previewPrice(rows: RuleRow[], sample: SampleEvent): Preview {
  const card = parseRateCard(rows);
  const errors = [...card.errors];
  const q: Record<string, string> = {};
  for (const x of sample.quantities) if (!blank(x.name) || !blank(x.value)) q[text(x.name)] = text(x.value);
  const p: Record<string, PropertyValue> = {};
  for (const f of sample.properties) {
    if (blank(f.key) && blank(f.value)) continue;
    const v = filterValue(f, `properties.${text(f.key)}`, errors);
    if (v !== undefined) p[text(f.key)] = v;
  }
  const quantities = quantitiesSchema.safeParse(q, parseOptions);
  if (!quantities.success) for (const i of quantities.error.issues) errors.push(describeIssue(i, ['quantities']));
  const properties = propertiesSchema.safeParse(p, parseOptions);
  if (!properties.success) for (const i of properties.error.issues) errors.push(describeIssue(i, ['properties']));
  if (errors.length || !quantities.success || !properties.success) return { status: 'invalid', errors };
  const price = priceEvent(card.rules, text(sample.type), quantities.data, properties.data);
  if (!price) return { status: 'unpriced' };
  const rule = card.rules[price.rule];
  const { original } = rateCardInput(rows);
  return { status: 'priced', price, rule: original[price.rule], quantityNames: (rule.components ?? []).map((c) => c.quantity), baseAmount: rule.amount ?? '0' };
}

/** An error as a sentence that names its field as the form shows it: "Rule 1, component 2, tier 3, up to: must be…". */
export function fieldLabel(e: FieldError): string {
  if (!e.param) return e.message;
  const where = e.param
    .replace(/^billing_rules\[(\d+)\]/, (_, i) => `Rule ${Number(i) + 1}`)
    .replace(/^quantities\./, 'Sample quantity ')
    .replace(/^properties\./, 'Sample property ')
    .replace(/\.components\[(\d+)\]/, (_, j) => `, component ${Number(j) + 1}`)
    .replace(/\.tiers\[(\d+)\]/, (_, n) => `, tier ${Number(n) + 1}`)
    .replace(/\.filters\[(\d+)\]/, (_, k) => `, filter ${Number(k) + 1}`)
    .replace(/\.package\./, ', package ')
    .replace(/\.(\w+)$/, (_, f: string) => `, ${f.replace(/_/g, ' ')}`)
    .replace(/\]$/, '');
  const message = e.message.startsWith(e.param) ? e.message.slice(e.param.length).trim() : e.message;
  return `${where}: ${message}`;
}
