import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import Decimal from 'decimal.js';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { createAccount } from '../../testing/scenario';
import { ledgerSums } from './balances';
import { setTestTime, now } from '../../clock';
import { expireHolds } from '../events/events';
import { NO_RETRY } from '../../testing/retry';

const t = useTestDatabase();
process.env.BILLING_TEST_CLOCK = '1';

const amount = fc.integer({ min: 1, max: 5000 }).map((n) => new Decimal(n).div(100).toFixed());
const op = fc.oneof(
  fc.record({ kind: fc.constant('grant' as const), amount }),
  fc.record({ kind: fc.constant('event' as const), amount, gate: fc.boolean() }),
  fc.record({ kind: fc.constant('hold' as const), amount, gate: fc.boolean() }),
  fc.record({ kind: fc.constant('complete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('advance' as const), seconds: fc.integer({ min: 0, max: 4000 }), sweep: fc.boolean() }),
  fc.record({ kind: fc.constant('batch' as const), items: fc.array(fc.record({ amount, gate: fc.boolean(), pending: fc.boolean() }), { minLength: 1, maxLength: 5 }) }),
);

type Hold = { id: string; cost: Decimal; expiresAt: number; state: 'pending' | 'complete' | 'cancelled' };

describe('the ledger under random sequences', NO_RETRY, () => {
  it('keeps amount = sum of ledger rows and available = amount - live holds after every step', async () => {
    const co = await newCompany(t);
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 25 }), async (ops) => {
        const acct = await createAccount(co, { name: 'P', email: 'p@x.io' });
        await co.call('POST', `/v1/accounts/${acct}/balance/u`);
        let modelAmount = new Decimal(0);
        const holds: Hold[] = [];
        const live = () => holds.filter((h) => h.state === 'pending' && h.expiresAt > now().getTime());
        const available = () => live().reduce((a, h) => a.minus(h.cost), modelAmount);
        const event = (a: string, gate: boolean, pending: boolean) => ({ type: 'x', cost_override_amount: a, cost_override_denomination: 'u', gate_on_balance: gate, state: pending ? 'pending' : 'complete' });
        const apply = (id: string, a: string, gate: boolean, pending: boolean, state: string) => {
          const rejected = gate && new Decimal(a).gt(available());
          expect(state).toBe(rejected ? 'rejected' : pending ? 'pending' : 'complete');
          if (rejected) return;
          if (pending) holds.push({ id, cost: new Decimal(a), expiresAt: now().getTime() + 3600_000, state: 'pending' });
          else modelAmount = modelAmount.minus(a);
        };

        for (const o of ops) {
          if (o.kind === 'grant') {
            await co.call('POST', `/v1/accounts/${acct}/balance/u`, { body: { amount: o.amount } });
            modelAmount = modelAmount.plus(o.amount);
          } else if (o.kind === 'event' || o.kind === 'hold') {
            const pending = o.kind === 'hold';
            const r = await co.call('POST', `/v1/accounts/${acct}/events`, { body: event(o.amount, o.gate, pending) });
            const id = r.status === 402 ? r.body.error.rejected_event_id : r.body.data.id;
            apply(id, o.amount, o.gate, pending, r.status === 402 ? 'rejected' : r.body.data.state);
          } else if (o.kind === 'batch') {
            const r = await co.call('POST', '/v1/events', { body: o.items.map((i) => ({ ...event(i.amount, i.gate, i.pending), account_id: acct })) });
            expect(r.status).toBe(200);
            o.items.forEach((i, k) => apply(r.body.data[k].id, i.amount, i.gate, i.pending, r.body.data[k].state));
          } else if (o.kind === 'complete' || o.kind === 'cancel') {
            if (!holds.length) continue;
            const h = holds[o.pick % holds.length];
            const r = await co.call('PUT', `/v1/events/${h.id}`, { body: { state: o.kind === 'complete' ? 'complete' : 'cancelled' } });
            const legal = h.state === 'pending' && h.expiresAt > now().getTime();
            // The same transition sent again answers 200 and changes nothing.
            const repeated = h.state === (o.kind === 'complete' ? 'complete' : 'cancelled');
            expect(r.status).toBe(legal || repeated ? 200 : 409);
            if (legal) {
              h.state = o.kind === 'complete' ? 'complete' : 'cancelled';
              if (h.state === 'complete') modelAmount = modelAmount.minus(h.cost);
            }
          } else {
            setTestTime(now().getTime() + o.seconds * 1000);
            if (o.sweep) await expireHolds(t.database.db, now());
          }

          const b = (await co.call('GET', `/v1/accounts/${acct}/balance/u`)).body.data;
          const pending = live().reduce((a, h) => a.plus(h.cost), new Decimal(0));
          expect(b.amount).toBe(modelAmount.toNumber());
          expect(b.pending).toBe(pending.toNumber());
          expect(b.available).toBe(modelAmount.minus(pending).toNumber());
          const sums = await ledgerSums(t.database.db, acct);
          const total = sums.find((s) => s.denomination === 'u')?.total ?? '0';
          expect(new Decimal(total).eq(modelAmount)).toBe(true);
        }
      }),
      // 30 on each database: the 60 histories it checked when it also ran through PgBouncer.
      { numRuns: 30 },
    );
  }, 600_000);
});
