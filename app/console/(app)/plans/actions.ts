'use server';
import { planCreate, type PlanCreate } from '@/lib/api/schemas/plans';
import { createPlan } from '@/lib/billing/catalog/plans';
import { FormInvalid, consoleAction, field, parseWith, type FieldError } from '@/lib/console/forms';
import { dollarsToCents } from '@/lib/console/format';
import { rateCardInput, rateCardParam, rateCardRows } from '@/lib/console/rate-card-form';

/**
 * The filled-in rows of a repeating group (`balances[2].amount`...), in order, with the form's
 * row number of each, so an error about the API's `balances[0]` lands on the row the person sees.
 */
function rowsOf(fd: FormData, group: string, required: string[]) {
  const found = new Map<number, Record<string, string>>();
  for (const [key, raw] of fd.entries()) {
    const m = key.match(new RegExp(`^${group}\\[(\\d+)\\]\\.(\\w+)$`));
    if (!m || typeof raw !== 'string') continue;
    const row = found.get(Number(m[1])) ?? {};
    if (raw.trim() !== '') row[m[2]] = raw.trim();
    found.set(Number(m[1]), row);
  }
  const original: number[] = [];
  const rows: Record<string, string>[] = [];
  for (const [i, row] of [...found.entries()].sort((a, b) => a[0] - b[0])) {
    if (!required.some((k) => row[k] !== undefined)) continue; // an untouched row
    original.push(i);
    rows.push(row);
  }
  return { rows, original };
}

/** POST /v1/companies/{company_id}/plans, from the console; then the new plan's page. */
export const createPlanAction = consoleAction(
  (fd) => {
    const balances = rowsOf(fd, 'balances', ['denomination', 'amount', 'overage_charge_amount', 'variable_unit_price']);
    const ruleRows = rateCardRows(fd);
    const rules = rateCardInput(ruleRows);
    const flags = rowsOf(fd, 'flags', ['name']);
    const input = {
      name: field(fd, 'name'),
      charge_amount: dollarsToCents(field(fd, 'charge_amount') || '0'),
      billing_period: field(fd, 'billing_period') || 'month',
      overage_charge_mode: field(fd, 'overage_charge_mode') || 'none',
      ...(field(fd, 'threshold_alert_percentage') && { threshold_alert_percentage: field(fd, 'threshold_alert_percentage') }),
      balances: balances.rows.map((b) => ({
        denomination: b.denomination ?? '',
        amount: b.amount ?? '',
        ...(b.overage_charge_amount && { overage_charge_amount: dollarsToCents(b.overage_charge_amount) }),
        ...(b.variable_unit_price && { variable_unit_price: dollarsToCents(b.variable_unit_price) }),
      })),
      billing_rules: rules.input,
      flags: Object.fromEntries(flags.rows.map((f) => [f.name, f.enabled === 'on'])),
    };
    const remap = (e: FieldError): FieldError => {
      const param = e.param?.startsWith('billing_rules[')
        ? rateCardParam(e.param, ruleRows, rules.original)
        : (e.param?.replace(/^balances\[(\d+)\]/, (_, i) => `balances[${balances.original[Number(i)]}]`) ?? null);
      // The message names the field as the API did: name it as the form does.
      const message = e.param && param && e.message.startsWith(e.param) ? param + e.message.slice(e.param.length) : e.message;
      return { param, message };
    };
    let parsed: PlanCreate | undefined;
    let errors: FieldError[] = [];
    try {
      parsed = parseWith(planCreate, input, [], /^(charge_amount|balances\[\d+\]\.(overage_charge_amount|variable_unit_price))$/);
    } catch (err) {
      if (!(err instanceof FormInvalid)) throw err;
      errors = err.errors.map(remap);
    }
    // The form's own errors (a filter's key or value) come first, with the API's; nothing is saved.
    if (rules.errors.length || !parsed) throw new FormInvalid([...rules.errors, ...errors]);
    return parsed;
  },
  async ({ db, companyId, input }) => {
    const plan = await createPlan({ db, companyId, input });
    return { redirect: `/console/plans/${plan.id}` };
  },
  { revalidate: '/console/plans' },
);
