process.env.BILLING_TEST_CLOCK = '1';

import { describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { addUnits, createAccount, createPlan, creditGrant, use } from '../../testing/scenario';
import { now } from '../../clock';
import { checkEvent, checkEventInSteps, checkPaths, serializeCheck, type CheckResult } from './check';
import type { EventInput } from './input';

const t = useTestDatabase();

// A rate card with every kind of rule: filtered unit prices, a package under an array filter, a
// graduated search, a volume catch-all, and a flat call.
const rateCard = [
  { type: 'llm', denomination: 'credits', filters: { model: 'big' }, components: [{ quantity: 'input_tokens', unit_amount: '0.0025' }, { quantity: 'output_tokens', unit_amount: '0.01' }] },
  { type: 'llm', denomination: 'credits', filters: { model: ['small', 'mini'] }, amount: '0.5', components: [{ quantity: 'input_tokens', package: { size: 1000, amount: '0.75' } }] },
  { type: 'llm', denomination: 'credits', components: [{ quantity: 'input_tokens', tiers_mode: 'volume', tiers: [{ up_to: 1000, unit_amount: '0.001' }, { up_to: null, unit_amount: '0.0005', flat_amount: '0.1' }] }] },
  { type: 'search', denomination: 'credits', amount: '0.5', components: [{ quantity: 'queries', tiers_mode: 'graduated', tiers: [{ up_to: 10, unit_amount: 1 }, { up_to: null, unit_amount: '0.5', flat_amount: 2 }] }] },
  { type: 'call', denomination: 'credits', amount: '0.01' },
];

const bodies: EventInput[] = [
  { type: 'llm', quantities: { input_tokens: '1200', output_tokens: '300' }, properties: { model: 'big' } },
  { type: 'llm', quantities: { input_tokens: '1200', output_tokens: '300' }, properties: { model: 'big' }, gate_on_balance: false },
  { type: 'llm', quantities: { input_tokens: '40000', output_tokens: '1000' }, properties: { model: 'big' } },
  { type: 'llm', quantities: { input_tokens: '2001' }, properties: { model: 'mini', region: 'eu' } },
  { type: 'llm', quantities: { input_tokens: '3000' }, properties: { model: 'other' } },
  { type: 'llm', quantities: {} },
  { type: 'search', quantities: { queries: '6' } },
  { type: 'call' },
  { type: 'unpriced' },
  { type: 'q', cost_override: { amount: '0', denomination: 'credits' } },
  { type: 'q', cost_override: { amount: '4', denomination: 'credits' } },
  { type: 'q', cost_override: { amount: '30', denomination: 'credits' } },
  { type: 'q', cost_override: { amount: '30', denomination: 'credits' }, gate_on_balance: false },
  { type: 'q', cost_override: { amount: '1', denomination: 'gpu' } },
];

describe('POST /check in one statement', () => {
  it('answers every event as the check in steps does: rate cards, holds, spend limits, grants due, other denominations', async () => {
    const co = await newCompany(t);
    const plan = await createPlan(co, { name: 'AI', charge_amount: 0, balances: [{ amount: 20, denomination: 'credits' }], billing_rules: rateCard });
    // On the plan with its allowance; the same with holds and limits; with no plan and no balance;
    // with a grant that expires, and one that takes effect, an hour from now.
    const plain = await createAccount(co, { plan_id: plan.id });
    const limited = await createAccount(co, { plan_id: plan.id });
    const bare = await createAccount(co);
    const granted = await createAccount(co, { plan_id: plan.id });
    expect((await use(co, limited, 3)).status).toBe(200);
    expect((await use(co, limited, 5, { state: 'pending' })).status).toBe(200);
    const lapsing = await co.call('POST', `/v1/accounts/${limited}/events`, { body: { type: 'q', cost_override_amount: 2, cost_override_denomination: 'credits', state: 'pending', expires_in: 60 } });
    expect(lapsing.status).toBe(200);
    const limits = await co.call('PUT', `/v1/accounts/${limited}/spend_limits`, {
      body: [
        { denomination: 'credits', period: 'day', limit: 12, action: 'reject' },
        { denomination: 'credits', period: 'month', limit: 11, action: 'notify' },
      ],
    });
    expect(limits.status, JSON.stringify(limits.body)).toBe(200);
    const inAnHour = new Date(now().getTime() + 3_600_000).toISOString();
    await creditGrant(co, granted, { amount: 15, expires_at: inAnHour, priority: 0 });
    await creditGrant(co, granted, { amount: 7, effective_at: inAnHour });
    await addUnits(co, granted, 1);

    const answers: CheckResult[] = [];
    const before = { ...checkPaths };
    // Now, 61 s on (the short hold lapsed), and two hours on (the grants' time has come).
    for (const offset of [0, 61_000, 7_200_000]) {
      const at = new Date(now().getTime() + offset);
      for (const accountId of [plain, limited, bare, granted]) {
        for (const input of bodies) {
          const args = { db: t.database.db, companyId: co.company.id, accountId, input, now: at };
          const steps = await checkEventInSteps(args);
          expect(await checkEvent(args), `${accountId} ${JSON.stringify(input)} at +${offset} ms`).toEqual(steps);
          answers.push(steps);
        }
      }
    }
    // Every answer was reached, and both paths ran: a graduated price and a grant due go in steps.
    expect(new Set(answers.map((a) => a.reason))).toEqual(new Set([null, 'insufficient_balance', 'spend_limit']));
    expect(answers.some((a) => a.allowed && a.cost === null)).toBe(true);
    expect(checkPaths.oneStatement - before.oneStatement).toBeGreaterThan(100);
    // search (graduated) on the three plan accounts, three times; the other bodies of `granted` two hours on.
    expect(checkPaths.inSteps - before.inSteps).toBe(9 + 11);

    // Through the API: the same answer, and another company's account is not found.
    const body = { type: 'llm', quantities: { input_tokens: 1200, output_tokens: 300 }, properties: { model: 'big' } };
    const r = await co.call('POST', `/v1/accounts/${limited}/check`, { body });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const want = serializeCheck(await checkEventInSteps({ db: t.database.db, companyId: co.company.id, accountId: limited, input: bodies[0], now: now() }));
    expect(r.body.data).toEqual(want);
    // 3 completed and 7 held are 10 spent today: 6 more would pass the day's 12, though 10 are available.
    expect(r.body.data).toEqual({ allowed: false, cost: { amount: 6, denomination: 'credits' }, available: 10, reason: 'spend_limit' });
    const stranger = await newCompany(t, { name: 'Stranger' });
    expect((await stranger.call('POST', `/v1/accounts/${limited}/check`, { body })).status).toBe(404);
    await expect(checkEvent({ db: t.database.db, companyId: stranger.company.id, accountId: limited, input: bodies[0], now: now() })).rejects.toMatchObject({ status: 404 });
  });
});
