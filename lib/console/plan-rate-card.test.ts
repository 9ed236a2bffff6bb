import { beforeAll, describe, expect, it, vi } from 'vitest';
import { query, sql } from '../db/client';
import { Decimal } from '../money';
import type { ConsoleUser } from './next-auth';
import { newCompany, useTestDatabase } from '../testing/harness';
import { databaseFingerprint } from '../testing/fingerprint';
import type { FormState } from './forms';
import { previewPrice, rateCardRows } from './rate-card-form';

// The signed-in admin, as in form-input.test.ts: requireUser answers the one the test sets.
const session = vi.hoisted(() => ({ user: null as ConsoleUser | null }));
vi.mock('@/lib/console/next-auth', async (importOriginal) => ({
  ...(await importOriginal<typeof import('./next-auth')>()),
  requireUser: async () => session.user,
}));
vi.mock('next/cache', () => ({ revalidatePath: () => {}, revalidateTag: () => {} }));
vi.mock('next/headers', () => ({ headers: async () => new Headers({ 'x-forwarded-for': '198.51.100.251' }) }));

const t = useTestDatabase();
const idle: FormState = { status: 'idle' };

const form = (fields: Record<string, string>) => {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  return fd;
};

/** The plan form as the editor fills it: an LLM rate card, input tokens graduated and output tokens per unit. */
const FIELDS: Record<string, string> = {
  name: 'LLM',
  charge_amount: '0',
  billing_period: 'month',
  overage_charge_mode: 'none',
  'balances[0].denomination': 'usd',
  'balances[0].amount': '100',
  'billing_rules[0].type': 'llm',
  'billing_rules[0].amount': '',
  'billing_rules[0].denomination': 'usd',
  'billing_rules[0].filters[0].key': 'model',
  'billing_rules[0].filters[0].kind': 'text',
  'billing_rules[0].filters[0].value': 'big',
  'billing_rules[0].components[0].quantity': 'input_tokens',
  'billing_rules[0].components[0].price': 'graduated',
  'billing_rules[0].components[0].tiers[0].up_to': '1000',
  'billing_rules[0].components[0].tiers[0].unit_amount': '0.001',
  'billing_rules[0].components[0].tiers[0].flat_amount': '',
  'billing_rules[0].components[0].tiers[1].up_to': '',
  'billing_rules[0].components[0].tiers[1].unit_amount': '0.0005',
  'billing_rules[0].components[0].tiers[1].flat_amount': '0.1',
  'billing_rules[0].components[1].quantity': 'output_tokens',
  'billing_rules[0].components[1].price': 'unit',
  'billing_rules[0].components[1].unit_amount': '0.002',
  'billing_rules[1].type': 'llm',
  'billing_rules[1].amount': '0.01',
  'billing_rules[1].denomination': 'usd',
};

describe('the plan form rate card', () => {
  let co: Awaited<ReturnType<typeof newCompany>>;
  let createPlanAction: (state: FormState, fd: FormData) => Promise<FormState>;

  beforeAll(async () => {
    ({ createPlanAction } = await import('../../app/console/(app)/plans/actions'));
    co = await newCompany(t, { name: 'Rates', password: 'owner password 1' });
    const [admin] = await query<{ id: string; email: string; role: string }>(t.database.db, sql`select id, email, role from admins where company_id = ${co.company.id}`);
    session.user = { id: admin.id, email: admin.email, role: admin.role, companyId: co.company.id } as ConsoleUser;
  });

  const submit = (fields: Record<string, string>) =>
    createPlanAction(idle, form(fields)).catch((err: { digest?: string }) => {
      if (!err.digest?.startsWith('NEXT_REDIRECT')) throw err;
      return { status: 'ok', message: err.digest.split(';')[2] } as FormState;
    });

  it('saves the rate card the editor made, and an event on it costs what the preview showed', async () => {
    const state = await submit(FIELDS);
    expect(state.errors).toBeUndefined();
    const planId = state.message!.split('/').pop()!;
    const plan = (await co.call('GET', `/v1/plans/${planId}`)).body.data;
    expect(plan.billing_rules).toEqual([
      {
        type: 'llm',
        denomination: 'usd',
        amount: 0,
        filters: { model: 'big' },
        components: [
          { quantity: 'input_tokens', tiers_mode: 'graduated', tiers: [{ up_to: 1000, unit_amount: 0.001 }, { up_to: null, unit_amount: 0.0005, flat_amount: 0.1 }] },
          { quantity: 'output_tokens', unit_amount: 0.002 },
        ],
      },
      { type: 'llm', denomination: 'usd', amount: 0.01 },
    ]);

    const account = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@example.com', plan_id: planId } })).body.data;
    const rows = rateCardRows(form(FIELDS));
    for (const sample of [
      { type: 'llm', quantities: { input_tokens: '1500', output_tokens: '120' }, properties: { model: 'big' } },
      { type: 'llm', quantities: { input_tokens: '7' }, properties: { model: 'mini' } },
    ]) {
      const preview = previewPrice(rows, {
        type: sample.type,
        quantities: Object.entries(sample.quantities).map(([name, value]) => ({ name, value })),
        properties: Object.entries(sample.properties).map(([key, value]) => ({ key, value, kind: 'text' })),
      });
      expect(preview.status).toBe('priced');
      if (preview.status !== 'priced') continue;
      // The account's first event of the period: graduated tiers count from zero, as the preview does.
      const res = await co.call('POST', `/v1/accounts/${account.id}/events`, { body: sample });
      expect(res.status).toBe(200);
      expect(new Decimal(res.body.data.cost.amount).eq(preview.price.amount), JSON.stringify(sample)).toBe(true);
      expect(res.body.data.pricing.rule).toBe(preview.price.rule);
      expect(res.body.data.pricing.components.map((c: { amount: number }) => new Decimal(c.amount).toFixed())).toEqual(preview.price.components.map((c) => c.amount));
    }
  });

  it('refuses tiers out of order on that tier, and a filter it cannot read on that filter, storing nothing', async () => {
    const before = await databaseFingerprint(t.database.db);
    // The priced rule as the form's second row, after an untouched first one (left out of what
    // the API sees): the errors name the row the person sees.
    const fields = Object.fromEntries(
      Object.entries(FIELDS)
        .filter(([k]) => !k.startsWith('billing_rules[1].'))
        .map(([k, v]) => [k.replace('billing_rules[0]', 'billing_rules[1]'), v]),
    );
    const state = await submit({
      ...fields,
      'billing_rules[0].type': '',
      'billing_rules[0].amount': '',
      'billing_rules[0].denomination': '',
      'billing_rules[1].components[0].tiers[1].up_to': '500',
      'billing_rules[1].components[0].tiers[2].up_to': '',
      'billing_rules[1].components[0].tiers[2].unit_amount': '0.0001',
      'billing_rules[1].filters[0].kind': 'boolean',
    });
    expect(state.status).toBe('error');
    expect(state.errors).toEqual(
      expect.arrayContaining([
        { param: 'billing_rules[1].components[0].tiers[1].up_to', message: "billing_rules[1].components[0].tiers[1].up_to must be greater than the tier before's up_to (1000): tiers go in ascending order." },
        { param: 'billing_rules[1].filters[0].value', message: 'Enter true or false.' },
      ]),
    );
    expect(await databaseFingerprint(t.database.db)).toEqual(before);
  });

  it('keeps flat rules as they were: type, units per event and balance', async () => {
    const state = await submit({ name: 'Flat', charge_amount: '0', 'balances[0].denomination': 'credits', 'balances[0].amount': '5', 'billing_rules[0].type': 'query', 'billing_rules[0].amount': '2', 'billing_rules[0].denomination': 'credits' });
    const plan = (await co.call('GET', `/v1/plans/${state.message!.split('/').pop()}`)).body.data;
    expect(plan.billing_rules).toEqual([{ type: 'query', denomination: 'credits', amount: 2 }]);
    const missing = await submit({ name: 'Flat', charge_amount: '0', 'billing_rules[0].type': 'query', 'billing_rules[0].amount': '', 'billing_rules[0].denomination': 'credits' });
    expect(missing.errors).toEqual([{ param: 'billing_rules[0].amount', message: 'billing_rules[0].amount must be a finite number with at most 12 decimals' }]);
  });
});
