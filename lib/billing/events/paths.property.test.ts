process.env.BILLING_TEST_CLOCK = '1';

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import Decimal from 'decimal.js';
import { asc, eq } from 'drizzle-orm';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { transactions, webhookDeliveries } from '../../db/schema';
import { TOPICS } from '../webhooks/topics';

const t = useTestDatabase();

type Co = Awaited<ReturnType<typeof newCompany>>;

const amount = fc.integer({ min: 1, max: 6000 }).map((n) => (n / 100).toFixed(2));
const op = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('event' as const), type: fc.constantFrom('query', 'upload', 'unpriced'), override: fc.option(amount, { nil: undefined }), gate: fc.boolean(), hold: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('grant' as const), amount }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(), state: fc.constantFrom('complete', 'cancelled') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('plan' as const), which: fc.constantFrom(0, 1) }) },
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

/** A company with a webhook on every topic and two free plans that price `query` and `upload` differently. */
async function twinCompany(): Promise<{ co: Co; plans: string[] }> {
  const co = await newCompany(t);
  const w = await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'http://127.0.0.1:9/hook' } });
  expect(w.status, JSON.stringify(w.body)).toBe(200);
  for (const topic of TOPICS) expect((await co.call('POST', `/v1/companies/{company}/webhooks/${w.body.data.id}/subscribe/${topic}`)).status).toBe(200);
  const plans: string[] = [];
  for (const [included, price] of [['60', '7.5'], ['90', '12.25']]) {
    const r = await co.call('POST', '/v1/companies/{company}/plans', {
      body: {
        name: `Free ${included}`, charge_amount: 0, threshold_alert_percentage: 50,
        balances: [{ amount: included, denomination: 'tokens' }],
        billing_rules: [{ type: 'query', amount: price, denomination: 'tokens' }, { type: 'upload', amount: '0.5', denomination: 'tokens' }],
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    plans.push(r.body.data.id);
  }
  return { co, plans };
}

/** Everything an account's history left behind, in terms that do not depend on ids or which path wrote it. */
async function trace(co: Co, plans: string[], accountId: string) {
  const db = t.database.db;
  const balances = ((await co.call('GET', `/v1/accounts/${accountId}/balances`)).body.data as Record<string, unknown>[]).map((b) => [b.denomination, b.amount, b.pending, b.available, b.managed_by_plan_id !== null]);
  // Values, not the numeric scale a statement happened to leave ("60" and "60.0" are one amount).
  const n = (x: string) => new Decimal(x).toFixed();
  const ledger = (await db.select().from(transactions).where(eq(transactions.accountId, accountId)).orderBy(asc(transactions.createdAt), asc(transactions.id)))
    .map((r) => [r.type, r.denomination, n(r.amount), n(r.startingBalance), n(r.endingBalance), r.eventId !== null]);
  const list = (await co.call('GET', `/v1/companies/{company}/events?account_id=${accountId}&limit=100`)).body.data as Record<string, unknown>[];
  const events = list.reverse().map((e) => [e.type, e.state, e.cost_amount, e.cost_denomination, e.priced_by, e.gate_on_balance]);
  const outbox = (await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.accountId, accountId)))
    // Plan ids differ between the twins' companies: named by their place instead.
    .map((d) => plans.reduce((json, id, i) => json.replaceAll(id, `plan${i}`), JSON.stringify([d.topic, d.denomination, d.payload, d.status])))
    .sort();
  return { balances, ledger, events, outbox };
}

describe('the single-event statement and the general path', () => {
  it('leave the same balances, ledger, events and outbox for the same random history on twin accounts', async () => {
    const single = await twinCompany();
    const general = await twinCompany();
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 18 }), fc.constantFrom(0, 1), async (ops, first) => {
        const twins = [single, general].map(({ co, plans }) => ({ co, plans, id: '', holds: [] as string[] }));
        for (const tw of twins) {
          const r = await tw.co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Twin', email: 't@x.io', plan_id: tw.plans[first] } });
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          tw.id = r.body.data.id;
        }
        const [s, g] = twins;
        for (const o of ops as Op[]) {
          if (o.kind === 'event') {
            const body = {
              type: o.type,
              ...(o.override !== undefined && { cost_override_amount: o.override, cost_override_denomination: 'tokens' }),
              ...(o.gate && { gate_on_balance: true }),
              ...(o.hold && { state: 'pending' }),
            };
            const one = await s.co.call('POST', `/v1/accounts/${s.id}/events`, { body });
            const batch = await g.co.call('POST', '/v1/events', { body: [{ ...body, account_id: g.id }] });
            expect(batch.status, JSON.stringify(batch.body)).toBe(200);
            const state = batch.body.data[0].state as string;
            expect(one.status, JSON.stringify(one.body)).toBe(state === 'rejected' ? 402 : 200);
            if (state === 'pending') {
              s.holds.push(one.body.data.id);
              g.holds.push(batch.body.data[0].id);
            }
          } else if (o.kind === 'grant') {
            for (const tw of twins) expect((await tw.co.call('POST', `/v1/accounts/${tw.id}/balance/tokens`, { body: { amount: o.amount } })).status).toBe(200);
          } else if (o.kind === 'settle') {
            if (!s.holds.length) continue;
            const i = o.pick % s.holds.length;
            const answers = await Promise.all(twins.map((tw) => tw.co.call('PUT', `/v1/events/${tw.holds[i]}`, { body: { state: o.state } })));
            expect(answers[0].status).toBe(answers[1].status);
            for (const tw of twins) tw.holds.splice(i, 1);
          } else {
            const answers = [];
            for (const tw of twins) answers.push(await tw.co.call('POST', `/v1/accounts/${tw.id}/changeplan`, { body: { plan_id: tw.plans[o.which] } }));
            expect(answers[0].status).toBe(answers[1].status);
          }
        }
        const [a, b] = [await trace(s.co, s.plans, s.id), await trace(g.co, g.plans, g.id)];
        expect(a.balances).toEqual(b.balances);
        expect(a.events).toEqual(b.events);
        expect(a.ledger).toEqual(b.ledger);
        expect(a.outbox).toEqual(b.outbox);
      }),
      { numRuns: 8 },
    );
  }, 600_000);
});
