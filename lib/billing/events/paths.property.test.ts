process.env.BILLING_TEST_CLOCK = '1';

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import Decimal from 'decimal.js';
import { asc, eq } from 'drizzle-orm';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { type Co } from '../../testing/scenario';
import { events, transactions, webhookDeliveries } from '../../db/schema';
import { query, sql } from '../../db/client';
import { now, setTestTime } from '../../clock';
import { expireHolds } from './events';
import { TOPICS } from '../webhooks/topics';
import { NO_RETRY } from '../../testing/retry';

const t = useTestDatabase();


const amount = fc.integer({ min: 1, max: 6000 }).map((n) => (n / 100).toFixed(2));
// `tokens` is what the plans grant and price; `credits` starts without a balance (its first event takes the general path).
const denomination = fc.constantFrom('tokens', 'tokens', 'credits');
const op = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('event' as const),
      type: fc.constantFrom('query', 'upload', 'unpriced'),
      override: fc.option(fc.record({ amount, denomination }), { nil: undefined }),
      gate: fc.boolean(),
      hold: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('grant' as const), amount, denomination, deposit: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(), state: fc.constantFrom('complete', 'cancelled') }) },
  // Time passes on the test clock: holds past their hour read as cancelled, and the sweep may flip them.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('wait' as const), minutes: fc.integer({ min: 5, max: 75 }), sweep: fc.boolean() }) },
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
  const n = (x: string | null) => (x === null ? null : new Decimal(x).toFixed());
  const iso = (x: Date | null) => x?.toISOString() ?? null;
  const ledger = (await db.select().from(transactions).where(eq(transactions.accountId, accountId)).orderBy(asc(transactions.createdAt), asc(transactions.id)))
    .map((r) => [r.type, r.denomination, r.description, n(r.amount), n(r.startingBalance), n(r.endingBalance), r.eventId !== null, iso(r.createdAt)]);
  const stored = (await db.select().from(events).where(eq(events.accountId, accountId)).orderBy(asc(events.id)))
    .map((e) => [e.type, e.state, n(e.costAmount), e.costDenomination, e.pricedBy, e.gateOnBalance, e.metadata, iso(e.createdAt), iso(e.updatedAt), iso(e.expiresAt)]);
  // As the API shows them too: an expired hold the sweep has not reached reads as cancelled.
  const listed = ((await co.call('GET', `/v1/companies/{company}/events?account_id=${accountId}&limit=100`)).body.data as Record<string, unknown>[])
    .reverse()
    .map((e) => [e.type, e.state, e.cost, e.priced_by, e.gate_on_balance, e.expires_at]);
  const outbox = (await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.accountId, accountId)))
    // Plan ids differ between the twins' companies: named by their place instead.
    // The stored balance keeps the scale of the statement that moved it ("33.00" or "33"); sends normalise it.
    .map((d) => ({ ...d, payload: { ...(d.payload as { balance: string }), balance: n((d.payload as { balance: string }).balance) } }))
    .map((d) => plans.reduce((json, id, i) => json.replaceAll(id, `plan${i}`), JSON.stringify([d.topic, d.denomination, d.payload, d.status, d.attempts, iso(d.createdAt), iso(d.nextAttemptAt)])))
    .sort();
  const states = (await query<{ denomination: string; kind: string; period: string }>(
    db,
    sql`select b.denomination, n.kind, n.period from notification_states n join balances b on b.id = n.balance_id where b.account_id = ${accountId} order by 1, 2, 3`,
  )).map((r) => [r.denomination, r.kind, r.period]);
  return { balances, ledger, stored, listed, outbox, states };
}

describe('the single-event statement and the general path', NO_RETRY, () => {
  it('leave the same balances, ledger, events, outbox and notification states for the same random history on twin accounts', async () => {
    const single = await twinCompany();
    const general = await twinCompany();
    const db = t.database.db;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 12 }), fc.constantFrom(0, 1), async (ops, first) => {
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
              ...(o.override && { cost_override_amount: o.override.amount, cost_override_denomination: o.override.denomination }),
              ...(o.gate && { gate_on_balance: true }),
              ...(o.hold && { state: 'pending' }),
            };
            const one = await s.co.call('POST', `/v1/accounts/${s.id}/events`, { body });
            // The batch form spells the override as one object: the edge makes both spellings one input.
            const { cost_override_amount: _a, cost_override_denomination: _d, ...rest } = body as typeof body & { cost_override_amount?: string; cost_override_denomination?: string };
            const item = { ...rest, ...(o.override && { cost_override: o.override }), account_id: g.id };
            const batch = await g.co.call('POST', '/v1/events', { body: [item] });
            expect(batch.status, JSON.stringify(batch.body)).toBe(200);
            const state = batch.body.data[0].state as string;
            expect(one.status, JSON.stringify(one.body)).toBe(state === 'rejected' ? 402 : 200);
            if (state === 'pending') {
              s.holds.push(one.body.data.id);
              g.holds.push(batch.body.data[0].id);
            }
          } else if (o.kind === 'grant') {
            for (const tw of twins) {
              const r = o.deposit
                ? await tw.co.call('POST', `/v1/accounts/${tw.id}/deposit`, { body: { denomination: o.denomination, amount_to_deposit: o.amount, amount_to_charge: 0 } })
                : await tw.co.call('POST', `/v1/accounts/${tw.id}/balance/${o.denomination}`, { body: { amount: o.amount } });
              expect(r.status, JSON.stringify(r.body)).toBe(200);
            }
          } else if (o.kind === 'settle') {
            if (!s.holds.length) continue;
            const i = o.pick % s.holds.length;
            const answers = await Promise.all(twins.map((tw) => tw.co.call('PUT', `/v1/events/${tw.holds[i]}`, { body: { state: o.state } })));
            expect(answers[0].status).toBe(answers[1].status);
            for (const tw of twins) tw.holds.splice(i, 1);
          } else if (o.kind === 'wait') {
            setTestTime(now().getTime() + o.minutes * 60_000);
            if (o.sweep) await expireHolds(db, now());
          } else {
            const answers = [];
            for (const tw of twins) answers.push(await tw.co.call('POST', `/v1/accounts/${tw.id}/changeplan`, { body: { plan_id: tw.plans[o.which] } }));
            expect(answers[0].status).toBe(answers[1].status);
          }
        }
        const [a, b] = [await trace(s.co, s.plans, s.id), await trace(g.co, g.plans, g.id)];
        expect(a.balances).toEqual(b.balances);
        expect(a.stored).toEqual(b.stored);
        expect(a.listed).toEqual(b.listed);
        expect(a.ledger).toEqual(b.ledger);
        expect(a.outbox).toEqual(b.outbox);
        expect(a.states).toEqual(b.states);
      }),
      {
        numRuns: 24,
        examples: [
          // A hold that drove the balance below zero lapses unswept; the next event must clear `negative` on either path.
          [
            [
              { kind: 'event', type: 'query', override: { amount: '0.15', denomination: 'tokens' }, gate: false, hold: false },
              { kind: 'event', type: 'query', override: { amount: '10.53', denomination: 'tokens' }, gate: false, hold: false },
              { kind: 'event', type: 'query', override: { amount: '49.33', denomination: 'tokens' }, gate: false, hold: true },
              { kind: 'wait', minutes: 60, sweep: false },
              { kind: 'event', type: 'query', override: undefined, gate: false, hold: false },
              { kind: 'settle', pick: 0, state: 'complete' },
            ],
            0,
          ],
        ],
      },
    );
  }, 900_000);
});
