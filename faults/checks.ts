import Decimal from 'decimal.js';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import type { Client } from './client';
import type { Received } from '../lib/testing/webhook-receiver';
import { GPU, PLAN, REFILL, type Model, type World } from './workload';

type EventRow = { id: string; account_id: string; idempotency_key: string | null; state: string; cost_amount: string | null; cost_denomination: string | null };
type BalanceRow = { id: string; account_id: string; denomination: string; amount: string };
type TxRow = { id: string; account_id: string; balance_id: string; denomination: string; type: string; description: string; amount: string; starting_balance: string; ending_balance: string; event_id: string | null; charge_id: string | null };
type ChargeRow = { id: string; account_id: string; amount: string; reason: string; status: string; metadata: { effects?: { kind: string; due?: string; measured?: Record<string, string> }[] }; work_key: string | null };
type DeliveryRow = { id: string; topic: string; account_id: string | null; denomination: string | null; status: string };
type AccountRow = { id: string; plan_status: string; plan_periods: number; next_plan_renewal: Date | null; renewal_locked_until: Date | null };

export type Evidence = {
  sql: postgres.Sql;
  api: Client;
  stripe: Stripe;
  received: Received[];
  /** webhook-id of every request the receiver answered with 2xx. */
  delivered: Set<string>;
  world: World;
  model: Model;
  /** The shared test clock when the checks run. */
  now: Date;
};

export type Findings = { failures: string[]; counts: Record<string, number> };

const D = (x: string | number) => new Decimal(x);
const bkey = (accountId: string, denomination: string) => `${accountId}/${denomination}`;

function tally<K>(map: Map<K, number>, k: K, n = 1): void {
  map.set(k, (map.get(k) ?? 0) + n);
}

/**
 * The invariants that must hold after any fault, read from the database, the processor and
 * the webhook receiver, against what the client was told:
 * - every acknowledged event exists exactly once, in the state and at the cost it was told;
 * - every balance equals the sum of its ledger rows, and the amount the client expects from
 *   its acknowledged requests and the charges the processor made;
 * - every ledger row is explained (an acknowledged event or grant, or a paid charge's effect);
 * - no charge was paid twice at the processor, every payment there has its units or period,
 *   no charge is left pending, no request or renewal paid twice;
 * - every crossing notification was delivered at least once, and every crossing the ledger
 *   shows was notified.
 */
export async function checkInvariants(e: Evidence): Promise<Findings> {
  const { sql, world, model } = e;
  const failures: string[] = [];
  const fail = (s: string) => failures.push(s);
  const co = world.companyId;

  const events = await sql<EventRow[]>`select id, account_id, idempotency_key, state, cost_amount::text, cost_denomination from events where company_id = ${co}`;
  const balances = await sql<BalanceRow[]>`select id, account_id, denomination, amount::text from balances where company_id = ${co}`;
  const rows = await sql<TxRow[]>`select id, account_id, balance_id, denomination, type, description, amount::text, starting_balance::text, ending_balance::text, event_id, charge_id from transactions where company_id = ${co} order by id`;
  const charges = await sql<ChargeRow[]>`select id, account_id, amount::text, reason, status, metadata, work_key from charges where company_id = ${co}`;
  const deliveries = await sql<DeliveryRow[]>`select id, topic, account_id, denomination, status from webhook_deliveries where company_id = ${co} and topic in ('negative_balance', 'pause_balance', 'threshold')`;
  const accounts = await sql<AccountRow[]>`select id, plan_status, plan_periods, next_plan_renewal, renewal_locked_until from accounts where company_id = ${co}`;
  const intents = await e.stripe.paymentIntents.list({ limit: 100 }).autoPagingToArray({ limit: 10_000 });

  // --- Events: each acknowledged one exactly once, as acknowledged.
  const byKey = new Map<string, EventRow[]>();
  for (const ev of events) {
    if (!ev.idempotency_key) fail(`event ${ev.id} has no idempotency key: the client never sent it`);
    else byKey.set(ev.idempotency_key, [...(byKey.get(ev.idempotency_key) ?? []), ev]);
  }
  const finalState = new Map<string, string>();
  let acked = 0;
  for (const r of model.events.values()) {
    if (!r.acked) continue; // never acknowledged: already a defect of the client's record
    acked++;
    const found = byKey.get(r.key) ?? [];
    if (found.length !== 1) {
      fail(`acknowledged event ${r.key} (${r.acked}) is stored ${found.length} times`);
      continue;
    }
    const [row] = found;
    const expected = r.acked === 'pending' ? (r.settled ?? 'cancelled') : r.acked;
    finalState.set(row.id, expected);
    if (r.id && row.id !== r.id) fail(`event ${r.key}: acknowledged as ${r.id}, stored as ${row.id}`);
    if (row.state !== expected) fail(`event ${r.key}: expected ${expected}${r.acked === 'pending' && !r.settled ? ' (an untouched hold expires)' : ''}, stored ${row.state}`);
    if (row.cost_denomination !== r.denomination || row.cost_amount === null || !D(row.cost_amount).eq(r.cost)) {
      fail(`event ${r.key}: expected to cost ${r.cost} ${r.denomination}, stored ${row.cost_amount} ${row.cost_denomination}`);
    }
  }
  for (const key of byKey.keys()) if (!model.events.get(key)?.acked) fail(`event ${key} is stored but was never acknowledged`);

  // --- The processor: one payment per charge, each with its charge recorded as paid.
  const chargeById = new Map(charges.map((c) => [c.id, c]));
  const paidIntents = intents.filter((pi) => pi.status === 'succeeded');
  const intentsPerCharge = new Map<string, number>();
  for (const pi of paidIntents) {
    const chargeId = pi.metadata?.charge_id;
    if (!chargeId) {
      fail(`PaymentIntent ${pi.id} was paid without a charge id in its metadata`);
      continue;
    }
    tally(intentsPerCharge, chargeId);
    const charge = chargeById.get(chargeId);
    if (!charge) fail(`PaymentIntent ${pi.id} paid for charge ${chargeId}, which does not exist`);
    else if (charge.status !== 'succeeded') fail(`PaymentIntent ${pi.id} paid ${pi.amount} cents for charge ${chargeId}, recorded as ${charge.status}: what it paid for is missing`);
    else if (Number(charge.amount) !== pi.amount) fail(`charge ${chargeId} is ${charge.amount} cents, its PaymentIntent ${pi.amount}`);
  }
  for (const [chargeId, n] of intentsPerCharge) if (n > 1) fail(`charge ${chargeId} was paid ${n} times at the processor`);
  for (const c of charges) {
    if (c.status === 'pending') fail(`charge ${c.id} (${c.reason}) is still pending after settling`);
    if (c.status === 'succeeded' && Number(c.amount) > 0 && !intentsPerCharge.has(c.id)) fail(`charge ${c.id} (${c.reason}, ${c.amount} cents) is recorded as paid, and the processor has no payment for it`);
  }
  const paidCharges = charges.filter((c) => c.status === 'succeeded');
  // No request and no renewal paid twice, whatever the charge rows say.
  for (const d of model.deposits.filter((x) => x.acked)) {
    const paid = paidCharges.filter((c) => c.reason === 'deposit' && c.work_key?.startsWith(`req:${d.key}:`));
    if (paid.length !== 1) fail(`deposit ${d.key} was acknowledged and paid ${paid.length} times`);
  }
  const renewalsByDue = new Map<string, number>();
  for (const c of paidCharges.filter((x) => x.reason === 'plan_renewal')) tally(renewalsByDue, `${c.account_id} ${c.metadata.effects?.[0]?.due}`);
  for (const [due, n] of renewalsByDue) if (n > 1) fail(`renewal ${due} was paid ${n} times`);

  // --- The ledger: every row explained, every acknowledged change present once.
  const eventRows = new Map<string, TxRow[]>();
  const chargeRows = new Map<string, TxRow[]>();
  const grantRows = new Map<string, TxRow[]>();
  for (const t of rows) {
    if (t.event_id) eventRows.set(t.event_id, [...(eventRows.get(t.event_id) ?? []), t]);
    else if (t.charge_id) chargeRows.set(t.charge_id, [...(chargeRows.get(t.charge_id) ?? []), t]);
    else if (t.type === 'grant') grantRows.set(t.description, [...(grantRows.get(t.description) ?? []), t]);
    else fail(`ledger row ${t.id} (${t.type}, ${t.amount} ${t.denomination}) is explained by no event, charge or grant`);
  }
  const eventsById = new Map(events.map((ev) => [ev.id, ev]));
  for (const [eventId, ts] of eventRows) {
    const ev = eventsById.get(eventId);
    if (finalState.get(eventId) !== 'complete') fail(`event ${eventId} (${ev?.idempotency_key}) moved a balance, and was not acknowledged as complete`);
    // A cost is drawn grant by grant: one row per grant it takes from (and one for what goes below zero).
    const moved = ts.reduce((x, t) => x.add(t.amount), D(0));
    if (!ev?.cost_amount || !moved.eq(D(ev.cost_amount).neg())) fail(`the ledger rows of event ${eventId} (${ev?.idempotency_key}) move ${moved}, the event costs ${ev?.cost_amount}`);
    for (const t of ts) {
      if (D(t.amount).gt(0) || (ts.length > 1 && D(t.amount).isZero())) fail(`ledger row ${t.id} of event ${eventId} moves ${t.amount}`);
      if (t.denomination !== ev?.cost_denomination) fail(`ledger row ${t.id} of event ${eventId} is in ${t.denomination}, the event costs ${ev?.cost_denomination}`);
    }
  }
  for (const [eventId, state] of finalState) if (state === 'complete' && !eventRows.has(eventId)) fail(`complete event ${eventId} (${eventsById.get(eventId)?.idempotency_key}) has no ledger row`);
  for (const g of model.grants.filter((x) => x.acked)) {
    const ts = grantRows.get(g.reason) ?? [];
    if (ts.length !== 1) fail(`grant ${g.key} was acknowledged and is in the ledger ${ts.length} times`);
    for (const t of ts) if (!D(t.amount).eq(g.amount) || t.account_id !== g.accountId || t.denomination !== g.denomination) fail(`grant ${g.key}: row ${t.id} moves ${t.amount} ${t.denomination} on ${t.account_id}`);
  }
  for (const reason of grantRows.keys()) if (!model.grants.some((g) => g.acked && g.reason === reason)) fail(`grant "${reason}" is in the ledger and was never acknowledged`);

  // What each paid charge must have added, and where.
  const fromCharges = new Map<string, Decimal>();
  const depositsByReason = new Map(model.deposits.filter((d) => d.acked).map((d) => [d.reason, d]));
  for (const chargeId of chargeRows.keys()) {
    const c = chargeById.get(chargeId);
    if (c?.status !== 'succeeded') fail(`charge ${chargeId} (${c?.status ?? 'missing'}) moved a balance without being paid`);
  }
  for (const c of paidCharges) {
    const all = chargeRows.get(c.id) ?? [];
    // What the charge bought that later expired with time (a plan allowance at its period's end,
    // written by whichever came first: the sweep, a read or the renewal) moved the balance too.
    const expired = all.filter((t) => t.type === 'expire' && t.description.startsWith('Expiry of grant '));
    for (const t of expired) {
      const k = bkey(c.account_id, t.denomination);
      fromCharges.set(k, (fromCharges.get(k) ?? D(0)).add(t.amount));
    }
    const ts = all.filter((t) => !expired.includes(t));
    const expect = (denomination: string, type: string, amount: Decimal, counted = true) => {
      const matching = ts.filter((t) => t.denomination === denomination && t.type === type);
      // A balance that does not move gets no ledger row (a renewal that finds the balance at its included amount).
      const wanted = amount.isZero() ? 0 : 1;
      if (matching.length !== wanted || (wanted && !D(matching[0].amount).eq(amount))) {
        fail(`paid charge ${c.id} (${c.reason}) should add ${amount} ${denomination} as ${type}; its rows: ${JSON.stringify(ts.map((t) => [t.type, t.amount, t.denomination]))}`);
      }
      const k = bkey(c.account_id, denomination);
      if (counted) fromCharges.set(k, (fromCharges.get(k) ?? D(0)).add(amount));
    };
    if (c.reason === 'deposit') {
      const d = depositsByReason.get(ts[0]?.description ?? '');
      if (!d || d.accountId !== c.account_id) fail(`paid deposit charge ${c.id} belongs to no acknowledged deposit (rows ${JSON.stringify(ts.map((t) => t.description))})`);
      // What the client was told is what it expects: counted once below, however often paid.
      else expect(d.denomination, 'deposit', D(d.amount), false);
    } else if (c.reason === 'refill_threshold') {
      expect(REFILL.denomination, 'refill_threshold', D(REFILL.amount));
    } else if (c.reason === 'plan_start') {
      expect(PLAN.denomination, 'plan_grant', D(PLAN.included));
    } else if (c.reason === 'plan_renewal') {
      // The new period starts from the balance the charge was priced on (usage during the
      // processor call carries over): what is left of the old allowance expires, a debt is
      // settled as overage, the new allowance is granted; together they move included − measured.
      const measured = c.metadata.effects?.[0]?.measured?.[PLAN.denomination];
      const moved = ts.reduce((x, t) => x.add(t.amount), D(0));
      if (measured === undefined) fail(`renewal charge ${c.id} has no measured ${PLAN.denomination}`);
      else if (!moved.eq(D(PLAN.included).sub(measured)) || ts.some((t) => t.denomination !== PLAN.denomination || !['expire', 'overage', 'plan_grant'].includes(t.type))) {
        fail(`paid charge ${c.id} (plan_renewal) should move ${D(PLAN.included).sub(measured)} ${PLAN.denomination}; its rows: ${JSON.stringify(ts.map((t) => [t.type, t.amount, t.denomination]))}`);
      } else {
        const k = bkey(c.account_id, PLAN.denomination);
        fromCharges.set(k, (fromCharges.get(k) ?? D(0)).add(moved));
      }
    } else fail(`paid charge ${c.id} has an unexpected reason ${c.reason}`);
    if (ts.length > 1 && c.reason !== 'plan_renewal') fail(`paid charge ${c.id} (${c.reason}) has ${ts.length} ledger rows`);
  }
  const refills = paidCharges.filter((c) => c.reason === 'refill_threshold').length;

  // --- Balances: the ledger's sum, and what the client expects.
  const expected = new Map<string, Decimal>();
  const add = (k: string, x: Decimal) => expected.set(k, (expected.get(k) ?? D(0)).add(x));
  for (const g of model.grants.filter((x) => x.acked)) add(bkey(g.accountId, g.denomination), D(g.amount));
  for (const d of model.deposits.filter((x) => x.acked)) add(bkey(d.accountId, d.denomination), D(d.amount));
  for (const [k, x] of fromCharges) add(k, x);
  for (const r of model.events.values()) {
    const row = byKey.get(r.key)?.[0];
    if (row && finalState.get(row.id) === 'complete') add(bkey(r.accountId, r.denomination), D(r.cost).neg());
  }
  const sums = new Map<string, Decimal>();
  for (const t of rows) sums.set(t.balance_id, (sums.get(t.balance_id) ?? D(0)).add(t.amount));
  for (const b of balances) {
    const k = bkey(b.account_id, b.denomination);
    const sum = sums.get(b.id) ?? D(0);
    if (!sum.eq(b.amount)) fail(`balance ${k} is ${b.amount}, its ledger sums to ${sum}`);
    const want = expected.get(k) ?? D(0);
    if (!want.eq(b.amount)) fail(`balance ${k} is ${b.amount}, the client expects ${want}`);
    expected.delete(k);
  }
  for (const [k, x] of expected) if (!x.eq(0)) fail(`balance ${k} does not exist, the client expects ${x}`);
  // And as a company sees them through the API: nothing held any more.
  for (const accountId of world.accounts) {
    const r = await e.api.untilAcknowledged(`balances of ${accountId}`, () => e.api.send('GET', `/v1/accounts/${accountId}/balances`), () => undefined);
    for (const b of r.body?.data ?? []) {
      const db = balances.find((x) => x.account_id === accountId && x.denomination === b.denomination);
      if (!db || !D(b.amount).eq(db.amount)) fail(`GET balances: ${accountId}/${b.denomination} answers ${b.amount}, stored ${db?.amount}`);
      if (Number(b.pending) !== 0) fail(`GET balances: ${accountId}/${b.denomination} still has ${b.pending} pending after every hold ended`);
    }
  }

  // --- Renewals: every paid one renewed a period, none is left due.
  for (const a of accounts) {
    const paid = paidIntents.filter((pi) => pi.metadata?.account_id === a.id && pi.metadata?.reason === 'plan_renewal').length;
    if (a.plan_periods !== paid) fail(`account ${a.id}: ${paid} renewals paid at the processor, ${a.plan_periods} periods renewed`);
    if (a.plan_status !== 'ACTIVE') fail(`account ${a.id} is ${a.plan_status}`);
    if (!a.next_plan_renewal || a.next_plan_renewal <= e.now) fail(`account ${a.id}: renewal due ${a.next_plan_renewal?.toISOString()} was not made by ${e.now.toISOString()}`);
    if (a.renewal_locked_until) fail(`account ${a.id}: a renewal lease is left (${a.renewal_locked_until.toISOString()})`);
  }

  // --- Webhooks: every crossing notification delivered at least once...
  const notified = new Map<string, number>();
  for (const d of deliveries) {
    if (d.status !== 'succeeded') fail(`${d.topic} delivery ${d.id} for ${d.account_id}/${d.denomination} is ${d.status}`);
    if (!e.delivered.has(d.id)) fail(`${d.topic} delivery ${d.id} for ${d.account_id}/${d.denomination} never reached the receiver`);
    tally(notified, `${d.topic} ${bkey(d.account_id ?? '', d.denomination ?? '')}`);
  }
  // ...and every crossing the ledger shows on a balance without holds (available = amount)
  // has its notification.
  const crossings = new Map<string, number>();
  for (const t of rows) {
    if (t.denomination === GPU) continue;
    const from = D(t.starting_balance);
    const to = D(t.ending_balance);
    const k = bkey(t.account_id, t.denomination);
    if (from.gte(0) && to.lt(0)) {
      tally(crossings, `negative_balance ${k}`);
      tally(crossings, `pause_balance ${k}`);
    }
    if (t.denomination === REFILL.denomination && from.gte(REFILL.threshold) && to.lt(REFILL.threshold)) tally(crossings, `threshold ${k}`);
  }
  for (const [k, n] of crossings) if ((notified.get(k) ?? 0) < n) fail(`${k}: the ledger crosses ${n} times, ${notified.get(k) ?? 0} notifications`);

  return {
    failures,
    counts: {
      events_acknowledged: acked,
      events_complete: [...finalState.values()].filter((s) => s === 'complete').length,
      events_rejected: [...finalState.values()].filter((s) => s === 'rejected').length,
      holds: [...model.events.values()].filter((r) => r.acked === 'pending').length,
      grants: model.grants.filter((g) => g.acked).length,
      deposits: model.deposits.filter((d) => d.acked).length,
      refills_paid: refills,
      renewals_paid: paidCharges.filter((c) => c.reason === 'plan_renewal').length,
      payments: paidIntents.length,
      ledger_rows: rows.length,
      crossings: [...crossings.values()].reduce((a, b) => a + b, 0),
      threshold_crossings: [...crossings].filter(([k]) => k.startsWith('threshold ')).reduce((a, [, n]) => a + n, 0),
      crossing_deliveries: deliveries.length,
      webhook_requests: e.received.length,
    },
  };
}
