import { beforeAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../testing/harness';
import { addUnits, balance, createAccount, createPlan, type Co } from '../testing/scenario';
import { expireHolds } from '../billing/events/events';

const t = useTestDatabase();

// An LLM sold by model and tokens in and out, a search sold in graduated tiers, embeddings in
// packages, and a catch-all priced by volume. Every price is exact to 12 decimals.
const rateCard = [
  {
    type: 'llm',
    denomination: 'usd',
    filters: { model: 'big' },
    components: [
      { quantity: 'input_tokens', unit_amount: '0.0000025' },
      { quantity: 'output_tokens', unit_amount: '0.00001' },
    ],
  },
  { type: 'llm', denomination: 'usd', filters: { model: ['small', 'mini'] }, components: [{ quantity: 'input_tokens', package: { size: 1000, amount: '0.001' } }] },
  {
    type: 'llm',
    denomination: 'usd',
    amount: '0.01',
    components: [{ quantity: 'input_tokens', tiers_mode: 'volume', tiers: [{ up_to: 1000, unit_amount: '0.001' }, { up_to: null, unit_amount: '0.0005', flat_amount: '0.1' }] }],
  },
  {
    type: 'search',
    denomination: 'usd',
    amount: '0.5',
    components: [{ quantity: 'queries', tiers_mode: 'graduated', tiers: [{ up_to: 10, unit_amount: 1 }, { up_to: null, unit_amount: '0.5', flat_amount: 2 }] }],
  },
];

describe('usage priced by quantities and properties', () => {
  let co: Co;
  let plan: { id: string };
  beforeAll(async () => {
    co = await newCompany(t);
    plan = await createPlan(co, { name: 'AI', charge_amount: 0, balances: [{ amount: 1000, denomination: 'usd' }], billing_rules: rateCard });
  });
  const post = (account: string, body: Record<string, unknown>) => co.call('POST', `/v1/accounts/${account}/events`, { body });

  it('shows the rate card on the plan as it was sent', async () => {
    const res = await co.call('GET', `/v1/plans/${plan.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.billing_rules[0]).toEqual({ ...rateCard[0], amount: 0, components: [{ quantity: 'input_tokens', unit_amount: 0.0000025 }, { quantity: 'output_tokens', unit_amount: 0.00001 }] });
    expect(res.body.data.billing_rules[3].components[0].tiers).toEqual([{ up_to: 10, unit_amount: 1 }, { up_to: null, unit_amount: 0.5, flat_amount: 2 }]);
  });

  it('prices each event by the first rule whose filters match, exactly, and shows how', async () => {
    const a = await createAccount(co, { plan_id: plan.id });
    const big = await post(a, { type: 'llm', quantities: { input_tokens: 1234, output_tokens: 567 }, properties: { model: 'big', region: 'eu' } });
    expect(big.status, JSON.stringify(big.body)).toBe(200);
    // 1234 × 0.0000025 + 567 × 0.00001 = 0.003085 + 0.00567
    expect(big.body.data).toMatchObject({
      cost: { amount: 0.008755, denomination: 'usd' },
      priced_by: 'plan',
      pricing: { rule: 0, components: [{ quantity: 1234, amount: 0.003085 }, { quantity: 567, amount: 0.00567 }] },
      quantities: { input_tokens: 1234, output_tokens: 567 },
      properties: { model: 'big', region: 'eu' },
    });
    // An array filter: any of its values; a package begun is a package paid.
    const mini = await post(a, { type: 'llm', quantities: { input_tokens: 2001 }, properties: { model: 'mini' } });
    expect(mini.body.data).toMatchObject({ cost: { amount: 0.003, denomination: 'usd' }, pricing: { rule: 1, components: [{ quantity: 2001, amount: 0.003 }] } });
    // No filter matches: the rule without filters, by volume (the whole quantity at the tier it reaches).
    const other = await post(a, { type: 'llm', quantity: 1, properties: { model: 'other' } });
    expect(other.body.data).toMatchObject({ cost: { amount: 0.01, denomination: 'usd' }, pricing: { rule: 2, components: [{ quantity: 0, amount: 0 }] } });
    const volume = await post(a, { type: 'llm', quantities: { input_tokens: 3000 }, properties: { model: 7 } });
    expect(volume.body.data).toMatchObject({ cost: { amount: 1.61, denomination: 'usd' }, pricing: { rule: 2, components: [{ quantity: 3000, amount: 1.6 }] } });
    // A type no rule names is not billed; a cost_override still wins over the rules.
    const unbilled = await post(a, { type: 'image', quantities: { pixels: 5 } });
    expect(unbilled.body.data).toMatchObject({ cost: null, priced_by: 'none', pricing: null });
    const override = await post(a, { type: 'llm', quantities: { input_tokens: 5 }, properties: { model: 'big' }, cost_override_amount: 2, cost_override_denomination: 'usd' });
    expect(override.body.data).toMatchObject({ cost: { amount: 2 }, priced_by: 'override', pricing: null });
    expect((await balance(co, a, 'usd')).amount).toBe(996.368245);
    // Twelve decimals, not a float's approximation.
    const tiny = await post(a, { type: 'llm', quantities: { input_tokens: '0.000001', output_tokens: '0.0000001' }, properties: { model: 'big' } });
    expect(tiny.body.data.cost.amount).toBe(0.000000000004);
  });

  it('counts graduated tiers per account and rule within the plan period, in request order on every path', async () => {
    const expected = [4.5, 4.5, 0.5 + 2 + 1 + 2, 0.5 + 2];
    const quantities = [4, 4, 4, 4];
    // One account by single events, one by one batch, one through group commit (concurrent singles).
    const single = await createAccount(co, { plan_id: plan.id });
    const costs: number[] = [];
    for (const q of quantities) costs.push((await post(single, { type: 'search', quantities: { queries: q } })).body.data.cost.amount);
    expect(costs).toEqual(expected);
    const batched = await createAccount(co, { plan_id: plan.id });
    const otherAccount = await createAccount(co, { plan_id: plan.id });
    const items = quantities.flatMap((q) => [
      { account_id: batched, type: 'search', quantities: { queries: q } },
      // Another account's count is its own.
      { account_id: otherAccount, type: 'search', quantities: { queries: 20 } },
    ]);
    const batch = await co.call('POST', '/v1/events', { body: items });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.data.filter((e: { account_id: string }) => e.account_id === batched).map((e: { cost: { amount: number } }) => e.cost.amount)).toEqual(expected);
    expect(batch.body.data.filter((e: { account_id: string }) => e.account_id === otherAccount).map((e: { cost: { amount: number } }) => e.cost.amount)).toEqual([0.5 + 10 + 5 + 2, 0.5 + 10, 0.5 + 10, 0.5 + 10]);
    expect((await balance(co, batched, 'usd')).amount).toBe(1000 - expected.reduce((s, c) => s + c, 0));
    // A hold does not count until it completes; a refused event never counts.
    const held = await createAccount(co, { plan_id: plan.id });
    const hold = await post(held, { type: 'search', quantities: { queries: 8 }, state: 'pending' });
    expect(hold.body.data).toMatchObject({ state: 'pending', cost: { amount: 8.5 } });
    expect((await post(held, { type: 'search', quantities: { queries: 4 } })).body.data.cost.amount).toBe(4.5);
    expect((await co.call('PUT', `/v1/events/${hold.body.data.id}`, { body: { state: 'complete' } })).status).toBe(200);
    expect((await post(held, { type: 'search', quantities: { queries: 1 } })).body.data.cost.amount).toBe(0.5 + 0.5);
    const poor = await createAccount(co, { plan_id: plan.id });
    await co.call('POST', `/v1/accounts/${poor}/events`, { body: { type: 'x', cost_override_amount: 995, cost_override_denomination: 'usd' } });
    const refused = await post(poor, { type: 'search', quantities: { queries: 10 }, gate_on_balance: true });
    expect(refused.status).toBe(402);
    expect(refused.body.error.type).toBe('insufficient_balance');
    expect((await post(poor, { type: 'search', quantities: { queries: 2 } })).body.data.cost.amount).toBe(2.5);
    // Group commit: concurrent singles for one account are priced in the order they are written.
    const grouped = await createAccount(co, { plan_id: plan.id });
    const answers = await Promise.all(quantities.map(() => post(grouped, { type: 'search', quantities: { queries: 4 } })));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map((r) => r.body.data.cost.amount).sort((x, y) => x - y)).toEqual([...expected].sort((x, y) => x - y));
    expect((await balance(co, grouped, 'usd')).amount).toBe(1000 - expected.reduce((s, c) => s + c, 0));
  });

  it('prices a batch exactly as the same events sent one by one', async () => {
    const one = await createAccount(co, { plan_id: plan.id });
    const many = await createAccount(co, { plan_id: plan.id });
    const events = [
      { type: 'llm', quantities: { input_tokens: 100, output_tokens: 3 }, properties: { model: 'big' } },
      { type: 'search', quantities: { queries: 7 } },
      { type: 'llm', quantities: { input_tokens: 999 }, properties: { model: 'small' }, state: 'pending' },
      { type: 'search', quantities: { queries: 7 }, gate_on_balance: true },
      { type: 'llm', quantities: { input_tokens: 1000 } },
    ];
    const singles = [];
    for (const e of events) singles.push((await post(one, e)).body.data);
    const batch = (await co.call('POST', '/v1/events', { body: events.map((e) => ({ ...e, account_id: many })) })).body.data;
    const shape = (e: Record<string, unknown>) => ({ state: e.state, cost: e.cost, pricing: e.pricing, quantities: e.quantities, properties: e.properties });
    expect(batch.map(shape)).toEqual(singles.map(shape));
    expect((await balance(co, many, 'usd')).amount).toBe((await balance(co, one, 'usd')).amount);
  });

  it('checks an event without recording it: priced and gated as recording it now would be', async () => {
    const a = await createAccount(co, { plan_id: plan.id });
    const check = (body: Record<string, unknown>) => co.call('POST', `/v1/accounts/${a}/check`, { body });
    const search = { type: 'search', quantities: { queries: 6 } };
    expect((await check(search)).body).toEqual({ data: { allowed: true, cost: { amount: 6.5, denomination: 'usd' }, available: 1000, reason: null } });
    // Nothing was recorded or counted: the check answers the same, and recording costs what it said.
    expect((await check(search)).body.data.cost.amount).toBe(6.5);
    expect((await co.call('GET', `/v1/companies/{company}/events?account_id=${a}`)).body.data).toEqual([]);
    expect((await post(a, search)).body.data.cost.amount).toBe(6.5);
    // The graduated count moved on: the next check prices from it (6 → 12: 4 × 1 + 2 × 0.5 + 2 + 0.5).
    expect((await check(search)).body.data.cost.amount).toBe(7.5);
    // Past what is available: refused, as a gated event would be; asked ungated, allowed.
    await co.call('POST', `/v1/accounts/${a}/events`, { body: { type: 'x', cost_override_amount: 990, cost_override_denomination: 'usd' } });
    const over = await check({ type: 'llm', quantities: { input_tokens: 2_000_000 }, properties: { model: 'big' } });
    expect(over.body.data).toEqual({ allowed: false, cost: { amount: 5, denomination: 'usd' }, available: 3.5, reason: 'insufficient_balance' });
    expect((await check({ type: 'llm', quantities: { input_tokens: 2_000_000 }, properties: { model: 'big' }, gate_on_balance: false })).body.data).toMatchObject({ allowed: true, reason: null });
    expect((await post(a, { type: 'llm', quantities: { input_tokens: 2_000_000 }, properties: { model: 'big' }, gate_on_balance: true })).status).toBe(402);
    // Not billed: allowed, no cost. An override is checked like any cost.
    expect((await check({ type: 'image' })).body.data).toEqual({ allowed: true, cost: null, available: null, reason: null });
    expect((await check({ type: 'image', cost_override_amount: 3.5, cost_override_denomination: 'usd' })).body.data).toMatchObject({ allowed: true, available: 3.5 });
    expect((await check({ type: 'image', cost_override_amount: 1, cost_override_denomination: 'gpu' })).body.data).toEqual({ allowed: false, cost: { amount: 1, denomination: 'gpu' }, available: 0, reason: 'insufficient_balance' });
    // Bad input and someone else's account.
    const bad = await check({ type: 'llm', quantities: { input_tokens: -1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ type: 'invalid_request', param: 'quantities.input_tokens' });
    const stranger = await newCompany(t, { name: 'Stranger' });
    expect((await stranger.call('POST', `/v1/accounts/${a}/check`, { body: search })).status).toBe(404);
    expect((await co.call('GET', `/v1/companies/{company}/events?account_id=${a}`)).body.data).toHaveLength(3);
  });

  it('holds an estimate for expires_in seconds and settles it at the actual, as overage_behavior says', async () => {
    const a = await createAccount(co, { plan_id: plan.id });
    await addUnits(co, a, 10, 'gpu');
    const hold = async (amount: number, extra: Record<string, unknown> = {}) => {
      const r = await post(a, { type: 'job', cost_override_amount: amount, cost_override_denomination: 'gpu', state: 'pending', ...extra });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.data as { id: string; created_at: string; expires_at: string };
    };
    const put = (id: string, body: Record<string, unknown>) => co.call('PUT', `/v1/events/${id}`, { body });
    const gpu = async () => {
      const b = await balance(co, a, 'gpu');
      return [b.amount, b.available];
    };
    // expires_in: the hold's life in seconds.
    const short = await hold(1, { expires_in: 120 });
    expect(Date.parse(short.expires_at) - Date.parse(short.created_at)).toBe(120_000);
    expect((await put(short.id, { state: 'cancelled' })).body.data).toMatchObject({ state: 'cancelled', cost: { amount: 1 }, held_cost: { amount: 1 } });
    // Less than held: the rest is released.
    const less = await hold(6);
    expect(await gpu()).toEqual([10, 4]);
    const settled = await put(less.id, { state: 'complete', cost_override_amount: 2.5 });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    expect(settled.body.data).toMatchObject({ state: 'complete', cost: { amount: 2.5, denomination: 'gpu' }, held_cost: { amount: 6, denomination: 'gpu' } });
    expect(await gpu()).toEqual([7.5, 7.5]);
    // The same completion again changes nothing; a different amount is 409; so is cancelling it.
    expect((await put(less.id, { state: 'complete', cost_override_amount: 2.5 })).body.data).toEqual(settled.body.data);
    const different = await put(less.id, { state: 'complete', cost_override_amount: 3 });
    expect(different.status).toBe(409);
    expect(different.body.error.type).toBe('conflict');
    expect((await put(less.id, { state: 'cancelled' })).status).toBe(409);
    expect(await gpu()).toEqual([7.5, 7.5]);
    // More than held, rejected: 409 insufficient_balance, the hold stays pending and nothing moves.
    const more = await hold(4);
    const rejected = await put(more.id, { state: 'complete', cost_override_amount: 20, overage_behavior: 'reject' });
    expect(rejected.status).toBe(409);
    expect(rejected.body.error.type).toBe('insufficient_balance');
    expect((await co.call('GET', `/v1/events/${more.id}`)).body.data.state).toBe('pending');
    expect(await gpu()).toEqual([7.5, 3.5]);
    // Capped: at most the held cost plus what is available.
    const capped = await put(more.id, { state: 'complete', cost_override_amount: 20, overage_behavior: 'cap' });
    expect(capped.body.data).toMatchObject({ cost: { amount: 7.5 }, held_cost: { amount: 4 } });
    expect(await gpu()).toEqual([0, 0]);
    expect((await put(more.id, { state: 'complete', cost_override_amount: 20, overage_behavior: 'cap' })).status).toBe(200);
    // Allowed (the default): the balance may go below zero.
    const allowed = await hold(1);
    expect((await put(allowed.id, { state: 'complete', cost_override_amount: 3 })).body.data).toMatchObject({ cost: { amount: 3 }, held_cost: { amount: 1 } });
    expect(await gpu()).toEqual([-3, -3]);
    // Extended: expires_in alone moves the expiry to that many seconds from now.
    const kept = await hold(0);
    const extended = await put(kept.id, { expires_in: 7200 });
    expect(extended.status, JSON.stringify(extended.body)).toBe(200);
    expect(Date.parse(extended.body.data.expires_at) - Date.parse(extended.body.data.updated_at)).toBe(7_200_000);
    expect((await put(allowed.id, { expires_in: 7200 })).status).toBe(409);
    // Completed with what was held, the record keeps both.
    expect((await put(kept.id, { state: 'complete' })).body.data).toMatchObject({ cost: { amount: 0 }, held_cost: { amount: 0 } });
  });

  it('a hold the sweep cancelled at its expiry is no repeat: cancelling or completing it is 409, in a batch or alone', async () => {
    const a = await createAccount(co, { plan_id: plan.id });
    await addUnits(co, a, 10, 'gpu');
    const single = (await post(a, { type: 'job', cost_override_amount: 2, cost_override_denomination: 'gpu', state: 'pending', expires_in: 60 })).body.data;
    const batched = (await co.call('POST', '/v1/events', { body: [{ account_id: a, type: 'job', cost_override_amount: 3, cost_override_denomination: 'gpu', state: 'pending', expires_in: 60 }] })).body.data[0];
    await expireHolds(t.database.db, new Date(Date.parse(single.expires_at) + 1_000));
    for (const hold of [single, batched]) {
      for (const body of [{ state: 'cancelled' }, { state: 'complete' }]) {
        const r = await co.call('PUT', `/v1/events/${hold.id}`, { body });
        expect(r.status, JSON.stringify(r.body)).toBe(409);
        expect(r.body.error.message).toMatch(/Only a pending event/);
      }
    }
    expect((await balance(co, a, 'gpu')).available).toBe(10);
  });

  it('settles a rate-card hold at the actual quantities, priced by the same rule', async () => {
    const a = await createAccount(co, { plan_id: plan.id });
    const estimate = await post(a, { type: 'llm', quantities: { input_tokens: 1000, output_tokens: 1000 }, properties: { model: 'big' }, state: 'pending' });
    expect(estimate.body.data).toMatchObject({ cost: { amount: 0.0125 }, held_cost: { amount: 0.0125 } });
    const done = await co.call('PUT', `/v1/events/${estimate.body.data.id}`, { body: { state: 'complete', quantities: { input_tokens: 1000, output_tokens: 400 } } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.data).toMatchObject({
      cost: { amount: 0.0065, denomination: 'usd' },
      held_cost: { amount: 0.0125 },
      quantities: { input_tokens: 1000, output_tokens: 400 },
      pricing: { rule: 0, components: [{ quantity: 1000, amount: 0.0025 }, { quantity: 400, amount: 0.004 }] },
    });
    expect((await balance(co, a, 'usd')).amount).toBe(999.9935);
    // A graduated hold counts its actual quantity once completed.
    const searching = await post(a, { type: 'search', quantities: { queries: 2 }, state: 'pending' });
    expect((await co.call('PUT', `/v1/events/${searching.body.data.id}`, { body: { state: 'complete', quantities: { queries: 12 } } })).body.data.cost.amount).toBe(0.5 + 10 + 1 + 2);
    expect((await post(a, { type: 'search', quantities: { queries: 1 } })).body.data.cost.amount).toBe(1);
    // Quantities cannot settle an override's hold; bad transitions are 400 with the field.
    const override = await post(a, { type: 'llm', cost_override_amount: 1, cost_override_denomination: 'usd', state: 'pending' });
    const bad: [Record<string, unknown>, string][] = [
      [{ state: 'complete', quantities: { input_tokens: 1 } }, 'quantities'],
      [{ state: 'complete', cost_override_amount: 1, overage_behavior: 'maybe' }, 'overage_behavior'],
      [{ state: 'complete', quantities: { input_tokens: -1 } }, 'quantities.input_tokens'],
      [{ expires_in: 59 }, 'expires_in'],
      [{ expires_in: 604_801 }, 'expires_in'],
      [{ state: 'cancelled', cost_override_amount: 1 }, 'cost_override_amount'],
      [{ state: 'complete', expires_in: 600 }, 'expires_in'],
    ];
    for (const [body, param] of bad) {
      const res = await co.call('PUT', `/v1/events/${override.body.data.id}`, { body });
      expect(res.status, param).toBe(400);
      expect(res.body.error, param).toMatchObject({ type: 'invalid_request', param });
    }
    for (const [body, param] of [[{ type: 'llm', state: 'pending', expires_in: 59 }, 'expires_in'], [{ type: 'llm', expires_in: 600 }, 'expires_in'], [{ type: 'llm', state: 'pending', expires_in: 604_801 }, 'expires_in']] as const) {
      const res = await post(a, body);
      expect(res.status, param).toBe(400);
      expect(res.body.error.param).toBe(param);
    }
    expect((await co.call('GET', `/v1/events/${override.body.data.id}`)).body.data.state).toBe('pending');
  });

  it("answers the README's LLM example as it says", async () => {
    const llm = await createPlan(co, {
      name: 'LLM', charge_amount: 0, balances: [{ amount: 20, denomination: 'usd' }],
      billing_rules: [
        { type: 'llm', denomination: 'usd', filters: { model: 'large' }, components: [{ quantity: 'input_tokens', unit_amount: '0.000003' }, { quantity: 'output_tokens', unit_amount: '0.000015' }] },
        { type: 'llm', denomination: 'usd', filters: { model: ['small', 'mini'] }, components: [{ quantity: 'input_tokens', unit_amount: '0.0000002' }, { quantity: 'output_tokens', unit_amount: '0.0000008' }] },
        { type: 'llm', denomination: 'usd', amount: '0.01' },
      ],
    });
    const a = await createAccount(co, { plan_id: llm.id });
    const estimate = { type: 'llm', quantities: { input_tokens: 1200, output_tokens: 800 }, properties: { model: 'large' } };
    expect((await co.call('POST', `/v1/accounts/${a}/check`, { body: estimate })).body).toEqual({ data: { allowed: true, cost: { amount: 0.0156, denomination: 'usd' }, available: 20, reason: null } });
    const hold = await post(a, { ...estimate, state: 'pending', expires_in: 300, gate_on_balance: true });
    const done = await co.call('PUT', `/v1/events/${hold.body.data.id}`, { body: { state: 'complete', quantities: { input_tokens: 1200, output_tokens: 350 } } });
    expect(done.body.data).toMatchObject({
      cost: { amount: 0.00885, denomination: 'usd' },
      held_cost: { amount: 0.0156, denomination: 'usd' },
      pricing: { rule: 0, components: [{ quantity: 1200, amount: 0.0036 }, { quantity: 350, amount: 0.00525 }] },
    });
    expect((await balance(co, a, 'usd')).amount).toBe(19.99115);
  });

  it('filters the event list by properties', async () => {
    const a = await createAccount(co, { plan_id: plan.id });
    await post(a, { type: 'llm', quantity: 1, properties: { model: 'big', team: 'red' } });
    await post(a, { type: 'llm', quantity: 1, properties: { model: 'mini', team: 'red' } });
    await post(a, { type: 'llm', quantity: 1, properties: { model: 'big', team: 'blue', cached: true } });
    const list = async (q: string) => (await co.call('GET', `/v1/companies/{company}/events?account_id=${a}&${q}`)).body.data.map((e: { properties: { model: string; team: string } }) => `${e.properties.model}/${e.properties.team}`);
    expect(await list('properties[model]=big')).toEqual(['big/blue', 'big/red']);
    expect(await list('properties[model]=big&properties[team]=red')).toEqual(['big/red']);
    expect(await list('properties[cached]=true')).toEqual(['big/blue']);
    expect(await list('properties[model]=none')).toEqual([]);
  });

  it('refuses bad rate cards and bad usage with the path of the field, recording nothing', async () => {
    const rule = (c: Record<string, unknown>) => ({ name: 'Bad', charge_amount: 0, billing_rules: [{ type: 'x', denomination: 'usd', components: [{ quantity: 'q', unit_amount: 1 }, c] }] });
    const badPlans: [Record<string, unknown>, string][] = [
      [rule({ quantity: 'q', unit_amount: 1, package: { size: 2, amount: 1 } }), 'billing_rules[0].components[1]'],
      [rule({ quantity: 'q', tiers_mode: 'graduated', tiers: [{ up_to: 5, unit_amount: 1 }, { up_to: 3, unit_amount: 1 }, { up_to: null, unit_amount: 1 }] }), 'billing_rules[0].components[1].tiers[1].up_to'],
      [rule({ quantity: 'q', tiers_mode: 'volume', tiers: [{ up_to: 5, unit_amount: 1 }, { up_to: null, unit_amount: 1 }, { up_to: null, unit_amount: 1 }] }), 'billing_rules[0].components[1].tiers[1].up_to'],
      [rule({ quantity: 'q', tiers_mode: 'volume', tiers: [{ up_to: 5, unit_amount: 1 }, { up_to: 6, unit_amount: 1 }, { up_to: 10, unit_amount: 1 }] }), 'billing_rules[0].components[1].tiers[2].up_to'],
      [rule({ quantity: 'q', unit_amount: -1 }), 'billing_rules[0].components[1].unit_amount'],
      [rule({ quantity: 'q', package: { size: 0, amount: 1 } }), 'billing_rules[0].components[1].package.size'],
      [rule({ quantity: 'q', tiers: [{ up_to: null, unit_amount: 1 }] }), 'billing_rules[0].components[1].tiers_mode'],
    ];
    const plansBefore = (await co.call('GET', '/v1/companies/{company}/plans')).body.data.length;
    for (const [body, param] of badPlans) {
      const res = await co.call('POST', '/v1/companies/{company}/plans', { body });
      expect(res.status, param).toBe(400);
      expect(res.body.error, param).toMatchObject({ type: 'invalid_request', param });
    }
    expect((await co.call('GET', '/v1/companies/{company}/plans')).body.data.length).toBe(plansBefore);

    const a = await createAccount(co, { plan_id: plan.id });
    const many = (n: number, v: unknown) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, v]));
    const badEvents: [Record<string, unknown>, string][] = [
      [{ type: 'llm', quantities: many(11, 1) }, 'quantities'],
      [{ type: 'llm', properties: many(21, 'x') }, 'properties'],
      [{ type: 'llm', quantities: { input_tokens: -1 } }, 'quantities.input_tokens'],
      [{ type: 'llm', quantities: { input_tokens: 'lots' } }, 'quantities.input_tokens'],
      [{ type: 'llm', quantity: -2 }, 'quantity'],
      [{ type: 'llm', properties: { model: { nested: true } } }, 'properties.model'],
      [{ type: 'llm', quantity: 1, quantities: { input_tokens: 1 } }, 'quantity'],
    ];
    for (const [body, param] of badEvents) {
      const res = await post(a, body);
      expect(res.status, param).toBe(400);
      expect(res.body.error, param).toMatchObject({ type: 'invalid_request', param });
      const batch = await co.call('POST', '/v1/events', { body: [{ account_id: a, type: 'llm', quantity: 1 }, { ...body, account_id: a }] });
      expect(batch.status, param).toBe(400);
      expect(batch.body.error.param, param).toBe(`[1].${param}`);
    }
    expect((await co.call('GET', `/v1/companies/{company}/events?account_id=${a}`)).body.data).toEqual([]);
    expect((await balance(co, a, 'usd')).amount).toBe(1000);
  });
});
