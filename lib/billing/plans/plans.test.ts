import { beforeAll, describe, expect, it } from 'vitest';
import { newCompany, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { charges, createPlan, type Co } from '../../testing/scenario';

const t = useTestDatabase();
const local = useLocalStripe();


const valid = {
  name: 'Pro',
  charge_amount: 2500,
  charge_denomination: 'USD',
  billing_period: 'month',
  overage_charge_mode: 'postpay',
  threshold_alert_percentage: '80',
  balances: [
    { amount: '1000', denomination: 'tokens', overage_charge_amount: 2, overage_charge_denomination: 'USD' },
    { amount: 5, denomination: 'seats', overage_charge_amount: 0, overage_charge_denomination: 'usd', variable_unit_price: '250' },
  ],
  billing_rules: [{ type: 'query', amount: '1.5', denomination: 'tokens' }],
  flags: { sso: true, beta: false },
};

/** The plan-creation request as the API answers it, refusals included. */
async function postPlan(co: Co, body: Record<string, unknown>) {
  return co.call('POST', '/v1/companies/{company}/plans', { body });
}

describe('creating and reading plans', () => {
  let co: Co;
  beforeAll(async () => {
    co = await newCompany(t);
  });

  it('creates a plan and returns every field, readable by id and in the list', async () => {
    const r = await postPlan(co, valid);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Object.keys(r.body)).toEqual(['data']);
    const p = r.body.data;
    expect(p).toMatchObject({
      id: expect.stringMatching(/^p_/),
      company_id: co.company.id,
      name: 'Pro',
      charge_amount: 2500,
      charge_denomination: 'USD',
      billing_period: 'month',
      overage_charge_mode: 'postpay',
      threshold_alert_percentage: '80',
      balances: [
        { amount: 1000, denomination: 'tokens', overage_charge_amount: 2, overage_charge_denomination: 'USD', variable_unit_price: null },
        { amount: 5, denomination: 'seats', overage_charge_amount: 0, overage_charge_denomination: 'USD', variable_unit_price: 250 },
      ],
      billing_rules: [{ type: 'query', amount: 1.5, denomination: 'tokens' }],
      flags: { sso: true, beta: false },
      metadata: {},
    });
    expect(new Date(p.created_at).toISOString()).toBe(p.created_at);
    const read = await co.call('GET', `/v1/plans/${p.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(p);
    const unprefixed = await co.call('GET', `/plans/${p.id}`);
    expect(unprefixed.body.data).toEqual(p);
    const list = await co.call('GET', '/v1/companies/{company}/plans');
    expect(list.status).toBe(200);
    expect(list.body.data.map((x: { id: string }) => x.id)).toContain(p.id);
  });

  it('accepts the documented /companies/{company_id}/plan path, defaults and period synonyms', async () => {
    const r = await co.call('POST', '/companies/{company}/plan', { body: { name: 'Free' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ charge_amount: 0, charge_denomination: 'USD', billing_period: 'month', overage_charge_mode: 'none', threshold_alert_percentage: null, balances: [], billing_rules: [], flags: {} });
    const v1 = await co.call('POST', '/v1/companies/{company}/plan', { body: { name: 'Alias' } });
    expect(v1.status).toBe(200);
    for (const [given, stored] of [['monthly', 'month'], ['Yearly', 'year'], ['annual', 'year'], ['WEEK', 'week'], ['daily', 'day']]) {
      const p = await postPlan(co, { name: given, billing_period: given });
      expect(p.status, given).toBe(200);
      expect(p.body.data.billing_period).toBe(stored);
    }
    const pct = await postPlan(co, { name: 'pct', threshold_alert_percentage: 100 });
    expect(pct.body.data.threshold_alert_percentage).toBe('100');
    const frac = await postPlan(co, { name: 'pct', threshold_alert_percentage: '12.50' });
    expect(frac.body.data.threshold_alert_percentage).toBe('12.5');
  });

  it('lists newest first with limit and starting_after', async () => {
    const fresh = await newCompany(t);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createPlan(fresh, { name: `P${i}` })).id);
    const first = await fresh.call('GET', '/v1/companies/{company}/plans?limit=2');
    expect(first.body.data.map((p: { id: string }) => p.id)).toEqual([ids[2], ids[1]]);
    expect(first.headers.get('link')).toMatch(/rel="next"/);
    const rest = await fresh.call('GET', `/v1/companies/{company}/plans?limit=2&starting_after=${ids[1]}`);
    expect(rest.body.data.map((p: { id: string }) => p.id)).toEqual([ids[0]]);
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ['name missing', { ...valid, name: undefined }, 'name'],
    ['name empty', { ...valid, name: '  ' }, 'name'],
    ['name a number', { ...valid, name: 5 }, 'name'],
    ['charge_amount negative', { ...valid, charge_amount: -1 }, 'charge_amount'],
    ['charge_amount fractional', { ...valid, charge_amount: 10.5 }, 'charge_amount'],
    ['charge_amount a word', { ...valid, charge_amount: 'ten' }, 'charge_amount'],
    ['charge_amount a boolean', { ...valid, charge_amount: true }, 'charge_amount'],
    ['charge_amount huge', { ...valid, charge_amount: '1e400' }, 'charge_amount'],
    ['charge_amount past safe integers', { ...valid, charge_amount: 2 ** 60 }, 'charge_amount'],
    ['charge_denomination not USD', { ...valid, charge_denomination: 'EUR' }, 'charge_denomination'],
    ['charge_denomination a number', { ...valid, charge_denomination: 840 }, 'charge_denomination'],
    ['billing_period unknown', { ...valid, billing_period: 'fortnight' }, 'billing_period'],
    ['billing_period a prototype key', { ...valid, billing_period: 'constructor' }, 'billing_period'],
    ['billing_period toString', { ...valid, billing_period: 'toString' }, 'billing_period'],
    ['billing_period a number', { ...valid, billing_period: 30 }, 'billing_period'],
    ['overage_charge_mode unknown', { ...valid, overage_charge_mode: 'prepay' }, 'overage_charge_mode'],
    ['overage_charge_mode a boolean', { ...valid, overage_charge_mode: true }, 'overage_charge_mode'],
    ['threshold_alert_percentage 0', { ...valid, threshold_alert_percentage: '0' }, 'threshold_alert_percentage'],
    ['threshold_alert_percentage over 100', { ...valid, threshold_alert_percentage: '100.5' }, 'threshold_alert_percentage'],
    ['threshold_alert_percentage negative', { ...valid, threshold_alert_percentage: -10 }, 'threshold_alert_percentage'],
    ['threshold_alert_percentage a word', { ...valid, threshold_alert_percentage: 'most' }, 'threshold_alert_percentage'],
    ['threshold_alert_percentage a boolean', { ...valid, threshold_alert_percentage: true }, 'threshold_alert_percentage'],
    ['balances an object', { ...valid, balances: { tokens: 5 } }, 'balances'],
    ['balance without amount', { ...valid, balances: [{ denomination: 'tokens' }] }, 'balances[0].amount'],
    ['balance amount negative', { ...valid, balances: [{ amount: -5, denomination: 'tokens' }] }, 'balances[0].amount'],
    ['balance amount a word', { ...valid, balances: [{ amount: 'lots', denomination: 'tokens' }] }, 'balances[0].amount'],
    ['balance amount NaN string', { ...valid, balances: [{ amount: 'NaN', denomination: 'tokens' }] }, 'balances[0].amount'],
    ['balance amount too precise', { ...valid, balances: [{ amount: '0.0000000000001', denomination: 'tokens' }] }, 'balances[0].amount'],
    ['balance without denomination', { ...valid, balances: [{ amount: 5 }] }, 'balances[0].denomination'],
    ['balance denomination bad format', { ...valid, balances: [{ amount: 5, denomination: 'two words' }] }, 'balances[0].denomination'],
    ['balance denomination a number', { ...valid, balances: [{ amount: 5, denomination: 7 }] }, 'balances[0].denomination'],
    ['duplicate balance denominations', { ...valid, balances: [{ amount: 5, denomination: 'tokens' }, { amount: 6, denomination: 'tokens' }] }, 'balances[1].denomination'],
    ['overage_charge_amount fractional', { ...valid, balances: [{ amount: 5, denomination: 'tokens', overage_charge_amount: 1.5 }] }, 'balances[0].overage_charge_amount'],
    ['overage_charge_amount negative', { ...valid, balances: [{ amount: 5, denomination: 'tokens', overage_charge_amount: -2 }] }, 'balances[0].overage_charge_amount'],
    ['overage_charge_denomination not USD', { ...valid, balances: [{ amount: 5, denomination: 'tokens', overage_charge_denomination: 'GBP' }] }, 'balances[0].overage_charge_denomination'],
    ['variable_unit_price negative', { ...valid, balances: [{ amount: 5, denomination: 'tokens', variable_unit_price: -1 }] }, 'balances[0].variable_unit_price'],
    ['unknown balance field', { ...valid, balances: [{ amount: 5, denomination: 'tokens', price: 3 }] }, 'balances[0].price'],
    ['billing rule without type', { ...valid, billing_rules: [{ amount: 1, denomination: 'tokens' }] }, 'billing_rules[0].type'],
    ['flags an array', { ...valid, flags: ['sso'] }, 'flags'],
    ['flag value a string', { ...valid, flags: { sso: 'yes' } }, 'flags.sso'],
    ['metadata a string', { ...valid, metadata: 'x' }, 'metadata'],
    ['unknown top-level field', { ...valid, price: 3 }, 'price'],
  ];

  it.each(bad)('refuses %s with 400 naming the field', async (_name, body, param) => {
    const r = await postPlan(co, body);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ type: 'invalid_request', param });
    expect(r.body.error.message).toEqual(expect.any(String));
  });

  it('refuses a body that is not a JSON object', async () => {
    expect((await co.call('POST', '/v1/companies/{company}/plans', { raw: '{"name":', headers: { 'content-type': 'application/json' } })).status).toBe(400);
    expect((await co.call('POST', '/v1/companies/{company}/plans', { body: [valid] })).status).toBe(400);
    expect((await co.call('POST', '/v1/companies/{company}/plans', { raw: 'name=x', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
  });

  it('creates nothing on a refusal', async () => {
    const fresh = await newCompany(t);
    await postPlan(fresh, { ...valid, billing_period: 'constructor' });
    await postPlan(fresh, { ...valid, threshold_alert_percentage: 0 });
    expect((await fresh.call('GET', '/v1/companies/{company}/plans')).body.data).toEqual([]);
  });
});

describe("another company's plans", () => {
  let mine: Awaited<ReturnType<typeof newPayingCompany>>;
  let other: Awaited<ReturnType<typeof newPayingCompany>>;
  let theirPlan: string;
  let myPlan: string;
  beforeAll(async () => {
    mine = await newPayingCompany(t);
    other = await newPayingCompany(t);
    theirPlan = (await createPlan(other, { name: 'Theirs' })).id;
    myPlan = (await createPlan(mine, { name: 'Mine' })).id;
  });

  it('are 404 on GET, exactly like an unknown id', async () => {
    const r = await mine.call('GET', `/v1/plans/${theirPlan}`);
    expect(r.status).toBe(404);
    expect(r.body.error.type).toBe('not_found');
    const unknown = await mine.call('GET', '/v1/plans/p_doesnotexist');
    expect(unknown.status).toBe(404);
    expect(r.body.error.message).toBe(unknown.body.error.message);
    expect((await mine.call('GET', '/v1/companies/{company}/plans')).body.data.map((p: { id: string }) => p.id)).toEqual([myPlan]);
  });

  it('cannot be created under or listed for another company id', async () => {
    expect((await mine.call('POST', `/v1/companies/${other.company.id}/plans`, { body: { name: 'x' } })).status).toBe(404);
    expect((await mine.call('GET', `/v1/companies/${other.company.id}/plans`)).status).toBe(404);
  });

  it('are 404 as plan_id on account creation, and nothing is created', async () => {
    const before = (await local.control(`state?key=${mine.processorKey}`)).account.customers;
    const r = await mine.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'A', email: 'a@x.io', plan_id: theirPlan, token: 'tok_visa' } });
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ type: 'not_found', param: 'plan_id' });
    expect((await mine.call('GET', '/v1/companies/{company}/accounts')).body.data).toEqual([]);
    expect((await local.control(`state?key=${mine.processorKey}`)).account.customers).toBe(before);
  });

  it('are 404 as plan_id on changeplan, and the account is unchanged', async () => {
    const a = (await mine.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'A', email: 'a@x.io', plan_id: myPlan } })).body.data;
    expect(a.plan_status).toBe('ACTIVE');
    const r = await mine.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: theirPlan } });
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ type: 'not_found', param: 'plan_id' });
    const after = (await mine.call('GET', `/v1/accounts/${a.id}`)).body.data;
    expect(after).toMatchObject({ plan_id: myPlan, plan_status: 'ACTIVE', scheduled_plan_id: null });
    // Someone else's account is 404 too, whichever plan is named.
    expect((await other.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: theirPlan } })).status).toBe(404);
  });

  it('validates the changeplan body', async () => {
    const a = (await mine.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'B', email: 'b@x.io' } })).body.data;
    for (const [body, param] of [
      [{}, 'plan_id'],
      [{ plan_id: 5 }, 'plan_id'],
      [{ plan_id: 'a_123' }, 'plan_id'],
      [{ plan_id: myPlan, plan_variable_amounts: 'x' }, 'plan_variable_amounts'],
      [{ plan_id: myPlan, extra: 1 }, 'extra'],
    ] as const) {
      const r = await mine.call('POST', `/v1/accounts/${a.id}/changeplan`, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.param).toBe(param);
    }
  });
});

describe('account creation input around plans', () => {
  let co: Awaited<ReturnType<typeof newPayingCompany>>;
  let plan: string;
  beforeAll(async () => {
    co = await newPayingCompany(t);
    plan = (await createPlan(co, { name: 'Seats', charge_amount: 0, balances: [{ amount: 5, denomination: 'seats', variable_unit_price: 100 }, { amount: 10, denomination: 'gb' }] })).id;
  });

  const cases: [string, Record<string, unknown>, number, string][] = [
    ['plan_id malformed', { plan_id: 'plan-1' }, 400, 'plan_id'],
    ['plan_id a number', { plan_id: 12 }, 400, 'plan_id'],
    ['plan_id unknown', { plan_id: 'p_nope' }, 404, 'plan_id'],
    ['plan_variable_amounts without plan_id', { plan_variable_amounts: { seats: 3 } }, 400, 'plan_variable_amounts'],
    ['plan_variable_amounts an array', { plan_variable_amounts: [3] }, 400, 'plan_variable_amounts'],
    ['plan_variable_amounts a word', { plan_variable_amounts: { seats: 'many' } }, 400, 'plan_variable_amounts.seats'],
    ['plan_variable_amounts negative', { plan_variable_amounts: { seats: -1 } }, 400, 'plan_variable_amounts.seats'],
    ['plan_variable_amounts on a fixed balance', { plan_variable_amounts: { gb: 20 } }, 400, 'plan_variable_amounts.gb'],
    ['plan_variable_amounts on an unknown balance', { plan_variable_amounts: { cpu: 2 } }, 400, 'plan_variable_amounts.cpu'],
    ['enable_card_collector a word', { enable_card_collector: 'yes' }, 400, 'enable_card_collector'],
    ['token a number', { token: 4242 }, 400, 'token'],
  ];

  it.each(cases)('refuses %s', async (_name, extra, status, param) => {
    const body = { name: 'N', email: 'n@x.io', ...extra };
    if ('plan_variable_amounts' in extra && !('plan_id' in extra) && _name !== 'plan_variable_amounts without plan_id') Object.assign(body, { plan_id: plan });
    const r = await co.call('POST', '/v1/companies/{company}/accounts', { body });
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(r.body.error.param).toBe(param);
  });

  it('left no account behind after all those refusals', async () => {
    expect((await co.call('GET', '/v1/companies/{company}/accounts')).body.data).toEqual([]);
  });
});

describe('denominations named like members every object has', () => {
  it('price, start and upgrade a plan whose balances are named valueOf and constructor', async () => {
    const co = await newPayingCompany(t);
    const base = (await createPlan(co, { name: 'Base', charge_amount: 0, balances: [{ amount: 10, denomination: 'tokens' }] })).id;
    const named = (
      await createPlan(co, {
        name: 'Named',
        charge_amount: 500,
        balances: [
          { amount: 10, denomination: 'tokens' },
          { amount: 5, denomination: 'valueOf' },
          { amount: 2, denomination: 'constructor', variable_unit_price: 100 },
        ],
      })
    ).id;
    // Chosen amounts that leave the variable balance out, and a preview: priced, not a 500.
    const chosenElsewhere = await co.call('POST', '/v1/companies/{company}/accounts', {
      body: { name: 'V', email: 'v@x.io', plan_id: named, plan_variable_amounts: {}, token: 'tok_visa' },
    });
    expect(chosenElsewhere.status, JSON.stringify(chosenElsewhere.body)).toBe(200);
    const ann = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ann', email: 'ann@x.io', plan_id: base, token: 'tok_visa' } });
    expect(ann.status, JSON.stringify(ann.body)).toBe(200);
    const id = ann.body.data.id;
    const preview = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: named, plan_variable_amounts: { constructor: 4 } } });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body.data.charge_amount).toBe(700);
    // The upgrade is charged and applied: every balance at its included amount.
    const up = await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: named, plan_variable_amounts: { constructor: 4 } } });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.data.plan_id).toBe(named);
    for (const [denomination, amount] of [['tokens', 10], ['valueOf', 5], ['constructor', 4]] as const) {
      const b = await co.call('GET', `/v1/accounts/${id}/balance/${denomination}`);
      expect(b.status, denomination).toBe(200);
      expect(b.body.data.amount, denomination).toBe(amount);
    }
    expect((await charges(co, id)).map((c) => [c.amount, c.status])).toEqual([[700, 'succeeded']]);
  });
});

