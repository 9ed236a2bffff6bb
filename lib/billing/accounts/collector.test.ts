import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { api, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { collectorLinks } from '../../db/schema';
import { query } from '../../db/client';
import { sha256 } from '../../crypto';
import { viewCollector } from './collector';
import { advance, charges, createPlan, type PayingCo } from '../../testing/scenario';
import { now } from '../../clock';
import { reconcileCharges } from '../settlement';

process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
const t = useTestDatabase();
const local = useLocalStripe();


let addresses = 0;
/** Each scenario submits from an address of its own, so the per-address limit does not mix them up. */
const newAddress = () => `198.51.100.${++addresses}`;

async function pendingAccount(co: PayingCo) {
  const plan = await createPlan(co, { name: 'Pro', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }] });
  // The collector link is in the creation answer only.
  const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', plan_id: plan.id, enable_card_collector: true } });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return { id: created.body.data.id as string, path: new URL(created.body.data.card_collector_url).pathname };
}

const submit = (path: string, token: string, address: string) => api('POST', `${path}/submit`, { body: { token }, headers: { 'x-forwarded-for': address } });
const tokenOf = (path: string) => path.split('/').pop()!;

/** The account's charge statuses, newest first. */
const chargeStatuses = async (co: PayingCo, id: string) => (await charges(co, id)).map((c) => c.status);

describe('a card collector link', () => {
  it('takes only a card token made by Stripe.js, as do the portal\'s card calls: a payment method id is refused before anything is asked', async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const portal = await co.call('POST', `/v1/accounts/${a.id}/portal_link`);
    expect(portal.status).toBe(200);
    const before = (await local.control(`state?key=${co.processorKey}`)).account;
    for (const path of [`${a.path}/submit`, `${new URL(portal.body.data.url).pathname}/card`]) {
      for (const token of ['pm_card_visa', 'pm_1Abc', 'card_123', 'tok_visa x']) {
        const r = await api('POST', path, { body: { token }, headers: { 'x-forwarded-for': newAddress() } });
        expect(r.status, `${path} ${token}`).toBe(400);
        expect(r.body.error).toMatchObject({ type: 'invalid_request', param: 'token', message: expect.stringMatching(/card token made by Stripe\.js/) });
      }
    }
    expect((await local.control(`state?key=${co.processorKey}`)).account).toEqual(before);
    // None of it counted against the link: it still works.
    expect((await submit(a.path, 'tok_visa', newAddress())).status).toBe(200);
  });

  it("tells the card holder, on the collector and the portal, of a refused card in plain words, never the processor's own", async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const portal = await co.call('POST', `/v1/accounts/${a.id}/portal_link`);
    for (const path of [`${a.path}/submit`, `${new URL(portal.body.data.url).pathname}/card`]) {
      const r = await api('POST', path, { body: { token: 'tok_no_such_token' }, headers: { 'x-forwarded-for': newAddress() } });
      expect(r.status, path).toBe(400);
      expect(r.body.error, path).toMatchObject({ type: 'invalid_request', param: 'token', message: 'The card was refused by the payment processor. Check its details, or try another card.' });
      expect(r.body.error.message).not.toContain('tok_no_such_token');
    }
    // The company's own API call keeps the processor's words, for its developers.
    const own = await co.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 'tok_no_such_token' } });
    expect(own.status).toBe(400);
    expect(own.body.error.message).toMatch(/^The card token was refused by the payment processor: .*tok_no_such_token/);
  });

  it('is spent after 5 failed card attempts (declines and refused tokens): later submits are 410 link_expired, and a new link works', async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const from = newAddress();
    const failures = ['tok_chargeDeclined', 'tok_no_such_token', 'tok_chargeDeclined', 'tok_no_such_token'];
    for (const token of failures) {
      const r = await submit(a.path, token, from);
      expect([402, 400], JSON.stringify(r.body)).toContain(r.status);
      expect(r.body.error.link_spent).toBeUndefined();
    }
    const fifth = await submit(a.path, 'tok_chargeDeclined', from);
    expect(fifth.status).toBe(402);
    expect(fifth.body.error).toMatchObject({ type: 'card_declined', link_spent: true });
    expect(fifth.body.error.message).toBe('The card was refused, and this link can no longer be used: 5 card attempts through it failed. Ask Acme for a new link.');
    expect(fifth.body.error.decline_code).toBeTruthy();

    const good = await submit(a.path, 'tok_visa', from);
    expect(good.status).toBe(410);
    expect(good.body.error).toMatchObject({ type: 'link_expired', param: null });
    expect(good.body.error.message).toContain('5 card attempts');
    expect(Object.keys(good.body.error).sort()).toEqual(['message', 'param', 'request_id', 'type']);
    // Nothing was tried with the good card: no charge, no card, the plan still waits.
    expect(await chargeStatuses(co, a.id)).toEqual(['failed', 'failed', 'failed']);
    expect((await co.call('GET', `/v1/accounts/${a.id}`)).body.data).toMatchObject({ plan_status: 'PENDING_PAYMENT_METHOD' });
    expect(await viewCollector({ db: t.database.db, token: tokenOf(a.path) })).toEqual({ problem: 'spent', companyName: 'Acme' });

    const fresh = await co.call('POST', `/v1/accounts/${a.id}/card_collector`);
    expect(fresh.status).toBe(200);
    const again = await submit(new URL(fresh.body.data.card_collector_url).pathname, 'tok_visa', from);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.data.plan_status).toBe('ACTIVE');
    expect(await chargeStatuses(co, a.id)).toEqual(['succeeded', 'failed', 'failed', 'failed']);
  });

  it("does not count a refusal of the account's processor customer against the link, nor name it to the card holder", async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const { processor_id: customer } = (await co.call('GET', `/v1/accounts/${a.id}`)).body.data as { processor_id: string };
    // The company deleted the customer at the processor: every card is refused through no fault of its own.
    expect(await local.stripe(co.processorKey).customers.del(customer)).toMatchObject({ id: customer, deleted: true });
    const from = newAddress();
    for (let i = 0; i < 6; i++) {
      const r = await submit(a.path, 'tok_visa', from);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request', param: 'processor_id' });
      expect(r.body.error.message).not.toContain(customer);
    }
    expect(await linkRow(a.path)).toMatchObject({ failedAttempts: 0, usedAt: null });
    // The company's own call says the same.
    const direct = await co.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 'tok_visa' } });
    expect(direct.status).toBe(400);
    expect(direct.body.error.param).toBe('processor_id');
  });

  it('retries a past-due renewal with the new card: a decline is a failed attempt said in plain words, and the link stays for another card', async () => {
    const co = await newPayingCompany(t);
    const plan = await createPlan(co, { name: 'Pro', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', plan_id: plan.id, token: 'tok_visa' } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.data.id as string;
    expect((await co.call('POST', `/v1/accounts/${id}/card`, { body: { token: 'tok_chargeDeclined' } })).status).toBe(200);
    await advance(Math.ceil((new Date(created.body.data.next_plan_renewal).getTime() - now().getTime()) / 1000));
    expect((await co.call('GET', `/v1/accounts/${id}`)).body.data.plan_status).toBe('PAST_DUE');
    const link = await co.call('POST', `/v1/accounts/${id}/card_collector`);
    expect(link.status).toBe(200);
    const path = new URL(link.body.data.card_collector_url).pathname;
    const from = newAddress();
    // The page says that saving a card retries the overdue payment.
    const page = await viewCollector({ db: t.database.db, token: tokenOf(path) });
    expect('view' in page && page.view).toMatchObject({ pastDue: true, plan: null });

    const declined = await submit(path, 'tok_chargeDeclinedInsufficientFunds', from);
    expect(declined.status, JSON.stringify(declined.body)).toBe(402);
    expect(declined.body.error).toMatchObject({ type: 'card_declined', param: null });
    expect(declined.body.error.message).toBe('Your new card is saved, but the overdue payment with it was declined. The card was declined: it has insufficient funds.');
    expect(await linkRow(path)).toMatchObject({ failedAttempts: 1, usedAt: null, busyUntil: null });
    expect((await co.call('GET', `/v1/accounts/${id}`)).body.data.plan_status).toBe('PAST_DUE');

    const good = await submit(path, 'tok_visa', from);
    expect(good.status, JSON.stringify(good.body)).toBe(200);
    expect(good.body.data.plan_status).toBe('ACTIVE');
    expect(await linkRow(path)).toMatchObject({ usedAt: expect.any(Date) });
    expect((await charges(co, id))[0]).toMatchObject({ reason: 'plan_renewal', status: 'succeeded', amount: 2500 });
  });

  it('does not count failures that say nothing about the card, and starts the plan with a good one', async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const from = newAddress();
    for (let i = 0; i < 4; i++) expect((await submit(a.path, 'tok_chargeDeclined', from)).status).toBe(402);
    // The processor is down: not the card's fault, so not the fifth failure.
    await local.control('fail', { status: 500, count: 2, path_prefix: '/v1/payment_methods', method: 'POST' });
    for (let i = 0; i < 2; i++) expect((await submit(a.path, 'tok_visa', from)).status).toBe(502);
    expect(await linkRow(a.path)).toMatchObject({ failedAttempts: 4, usedAt: null });
    const ok = await submit(a.path, 'tok_visa', from);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data.plan_status).toBe('ACTIVE');
  });

  it('that has expired answers 410 link_expired', async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const row = await linkRow(a.path);
    await t.database.db.update(collectorLinks).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(collectorLinks.id, row.id));
    const r = await submit(a.path, 'tok_visa', newAddress());
    expect(r.status).toBe(410);
    expect(r.body.error.type).toBe('link_expired');
    expect(await chargeStatuses(co, a.id)).toEqual([]);
  });

  it('whose submission died mid-way is free again after the lease, not left used', async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const row = await linkRow(a.path);
    // What a process that claimed the link and was then killed leaves behind.
    await t.database.db.update(collectorLinks).set({ busyUntil: new Date(now().getTime() + 120_000) }).where(eq(collectorLinks.id, row.id));
    const page = await viewCollector({ db: t.database.db, token: tokenOf(a.path) });
    expect('view' in page, JSON.stringify(page)).toBe(true);
    const meanwhile = await submit(a.path, 'tok_visa', newAddress());
    expect(meanwhile.status).toBe(409);
    expect(meanwhile.body.error.message).toBe('A card is being saved through this link; wait a moment and reload the page.');
    expect(await chargeStatuses(co, a.id)).toEqual([]);

    // The lease runs out.
    await t.database.db.update(collectorLinks).set({ busyUntil: new Date(now().getTime() - 1) }).where(eq(collectorLinks.id, row.id));
    const ok = await submit(a.path, 'tok_visa', newAddress());
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data.plan_status).toBe('ACTIVE');
    expect(await linkRow(a.path)).toMatchObject({ usedAt: expect.any(Date), busyUntil: null });
    const again = await submit(a.path, 'tok_mastercard', newAddress());
    expect(again.status).toBe(409);
    expect(again.body.error.message).toBe('This link was already used.');
    expect(await viewCollector({ db: t.database.db, token: tokenOf(a.path) })).toEqual({ problem: 'used' });
    expect(await chargeStatuses(co, a.id)).toEqual(['succeeded']);
  });

  it('charges only the plan start the page showed: after the company changed the plan, a stale page saves and charges nothing', async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const max = await createPlan(co, { name: 'Max', charge_amount: 5000, balances: [{ amount: 5000, denomination: 'tokens' }] });
    const page = await viewCollector({ db: t.database.db, token: tokenOf(a.path) });
    const shown = 'view' in page ? page.view.plan! : null;
    expect(shown).toMatchObject({ name: 'Pro', charge: 2500 });
    // The company moves the waiting account to another plan while the page is open.
    expect((await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: max.id } })).status).toBe(200);
    const send = (quote: unknown) => api('POST', `${a.path}/submit`, { body: { token: 'tok_visa', quote }, headers: { 'x-forwarded-for': newAddress() } });
    const stale = await send({ plan_id: shown!.id, charge: shown!.charge });
    expect(stale.status, JSON.stringify(stale.body)).toBe(409);
    expect(stale.body.error).toMatchObject({ type: 'conflict', param: 'quote', message: expect.stringMatching(/nothing was saved or charged\. Reload the page/) });
    expect(await chargeStatuses(co, a.id)).toEqual([]);
    expect((await co.call('GET', `/v1/accounts/${a.id}`)).body.data).toMatchObject({ plan_id: max.id, plan_status: 'PENDING_PAYMENT_METHOD', payment_method: null });
    expect(await linkRow(a.path)).toMatchObject({ usedAt: null, busyUntil: null, failedAttempts: 0 });
    // Reloaded: the page shows the new price, and the card is charged that.
    const again = await viewCollector({ db: t.database.db, token: tokenOf(a.path) });
    const now = 'view' in again ? again.view.plan! : null;
    expect(now).toMatchObject({ id: max.id, charge: 5000 });
    const ok = await send({ plan_id: now!.id, charge: now!.charge });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await charges(co, a.id)).map((c) => [c.amount, c.status])).toEqual([[5000, 'succeeded']]);
    // A quote that is not one is refused on its field.
    const bad = await send({ plan_id: max.id, charge: '50' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('quote.charge');
  });

  it('is used once its card started the plan charge, even before the answer, and serves again only if that charge was declined', async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const first = await submit(a.path, 'tok_chargeCustomerFail', newAddress());
    expect(first.status, JSON.stringify(first.body)).toBe(502);
    expect(first.body.error.charge_pending).toBe(true);
    // Said to the card holder in their words: no ids, no API advice.
    expect(first.body.error.message).toBe('Your card is saved. Its payment is still being confirmed; check back in a few minutes.');
    expect(await linkRow(a.path)).toMatchObject({ usedAt: expect.any(Date), busyUntil: null, failedAttempts: 0 });
    // While the answer is awaited the link takes no other card.
    expect(await viewCollector({ db: t.database.db, token: tokenOf(a.path) })).toEqual({ problem: 'used' });
    expect((await submit(a.path, 'tok_mastercard', newAddress())).status).toBe(409);
    // The processor declines it in the end: the plan still waits, and the same link takes another card.
    const [pending] = await charges(co, a.id);
    await fetch(`${local.url}/__control/payment_intents/${pending.processor_payment_intent_id}/complete`, { method: 'POST' });
    await advance(120);
    await reconcileCharges(t.database.db, now());
    expect(await chargeStatuses(co, a.id)).toEqual(['failed']);
    expect('view' in (await viewCollector({ db: t.database.db, token: tokenOf(a.path) }))).toBe(true);
    const second = await submit(a.path, 'tok_visa', newAddress());
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.data.plan_status).toBe('ACTIVE');
    expect(await chargeStatuses(co, a.id)).toEqual(['succeeded', 'failed']);
    expect(await linkRow(a.path)).toMatchObject({ usedAt: expect.any(Date) });
    // Started: used for good.
    expect(await viewCollector({ db: t.database.db, token: tokenOf(a.path) })).toEqual({ problem: 'used' });
  });

  it('is used for good once the plan charge its card started is paid, even when the answer came late, with the account\'s other links', async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const sibling = new URL((await co.call('POST', `/v1/accounts/${a.id}/card_collector`)).body.data.card_collector_url).pathname;
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    expect((await submit(a.path, 'tok_visa', newAddress())).status).toBe(502);
    const [pending] = await charges(co, a.id);
    await fetch(`${local.url}/__control/payment_intents/${pending.processor_payment_intent_id}/complete`, { method: 'POST' });
    await advance(120);
    await reconcileCharges(t.database.db, now());
    expect((await co.call('GET', `/v1/accounts/${a.id}`)).body.data.plan_status).toBe('ACTIVE');
    expect(await viewCollector({ db: t.database.db, token: tokenOf(a.path) })).toEqual({ problem: 'used' });
    const later = await submit(a.path, 'tok_mastercard', newAddress());
    expect(later.status).toBe(409);
    const other = await submit(sibling, 'tok_mastercard', newAddress());
    expect(other.status).toBe(409);
    expect(other.body.error.message).toBe('This link was already used.');
    expect((await co.call('GET', `/v1/accounts/${a.id}`)).body.data.payment_method).toMatchObject({ brand: 'visa' });
  });

  it('submitted twice at once saves one card and charges once', async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const both = await Promise.all([submit(a.path, 'tok_visa', newAddress()), submit(a.path, 'tok_mastercard', newAddress())]);
    expect(both.map((r) => r.status).sort(), JSON.stringify(both.map((r) => r.body))).toEqual([200, 409]);
    expect(await chargeStatuses(co, a.id)).toEqual(['succeeded']);
    expect(await linkRow(a.path)).toMatchObject({ usedAt: expect.any(Date), busyUntil: null });
  });

  it("used, retires the account's other collector links: an older one forwarded elsewhere cannot replace the card", async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const second = new URL((await co.call('POST', `/v1/accounts/${a.id}/card_collector`)).body.data.card_collector_url).pathname;
    expect((await submit(second, 'tok_visa', newAddress())).status).toBe(200);
    const older = await submit(a.path, 'tok_mastercard', newAddress());
    expect(older.status).toBe(409);
    expect(older.body.error.message).toBe('This link was already used.');
    expect(await viewCollector({ db: t.database.db, token: tokenOf(a.path) })).toEqual({ problem: 'used' });
    expect((await co.call('GET', `/v1/accounts/${a.id}`)).body.data.payment_method).toMatchObject({ brand: 'visa' });
    // A link made afterwards works.
    const later = new URL((await co.call('POST', `/v1/accounts/${a.id}/card_collector`)).body.data.card_collector_url).pathname;
    expect((await submit(later, 'tok_mastercard', newAddress())).status).toBe(200);
  });

  it('of one account, submitted together with another link of it, starts the plan and charges once', async () => {
    const co = await newPayingCompany(t);
    const a = await pendingAccount(co);
    const second = new URL((await co.call('POST', `/v1/accounts/${a.id}/card_collector`)).body.data.card_collector_url).pathname;
    const [one, two] = await Promise.all([submit(a.path, 'tok_visa', newAddress()), submit(second, 'tok_mastercard', newAddress())]);
    expect([one.status, two.status].filter((s) => s === 200).length, JSON.stringify([one.body, two.body])).toBeGreaterThanOrEqual(1);
    expect(await chargeStatuses(co, a.id)).toEqual(['succeeded']);
    expect((await co.call('GET', `/v1/accounts/${a.id}`)).body.data.plan_status).toBe('ACTIVE');
  });

  it('is written with its account or not at all: when the link cannot be stored, no account is left without one', async () => {
    const co = await newPayingCompany(t);
    const plan = await createPlan(co, { name: 'Pro', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const db = t.database.db;
    await db.execute(sql.raw(`create or replace function fail_link() returns trigger language plpgsql as $$ begin raise exception 'disk full'; end $$`));
    await db.execute(sql.raw('create trigger fail_link before insert on collector_links for each row execute function fail_link()'));
    try {
      for (const body of [
        { name: 'Pending', email: 'p@x.io', plan_id: plan.id, enable_card_collector: true, external_id: 'ext-pending' },
        { name: 'Open', email: 'o@x.io', enable_card_collector: true, external_id: 'ext-open' },
      ]) {
        const r = await co.call('POST', '/v1/companies/{company}/accounts', { body });
        expect(r.status, body.name).toBe(500);
      }
      const [{ n }] = await query<{ n: string }>(db, sql`select count(*)::text as n from accounts where company_id = ${co.company.id}`);
      expect(n).toBe('0');
    } finally {
      await db.execute(sql.raw('drop trigger fail_link on collector_links'));
    }
    // The same external ids are free: nothing of the failed attempts holds them.
    const again = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Pending', email: 'p@x.io', plan_id: plan.id, enable_card_collector: true, external_id: 'ext-pending' } });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await linkRow(new URL(again.body.data.card_collector_url).pathname)).toBeTruthy();
  });

  it('leaves usage unbilled while the plan waits for the card, and the plan prices it once the card starts it', async () => {
    const co = await newPayingCompany(t);
    const plan = await createPlan(co, { name: 'Metered', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }], billing_rules: [{ type: 'call', amount: 5, denomination: 'tokens' }] });
    const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', plan_id: plan.id, enable_card_collector: true } });
    const id = created.body.data.id as string;
    const single = await co.call('POST', `/v1/accounts/${id}/events`, { body: { type: 'call', gate_on_balance: true } });
    expect(single.status, JSON.stringify(single.body)).toBe(200);
    expect(single.body.data).toMatchObject({ priced_by: 'none', state: 'complete' });
    const batch = await co.call('POST', '/v1/events', { body: [{ account_id: id, type: 'call' }] });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    const listed = (await co.call('GET', `/v1/companies/{company}/events?account_id=${id}`)).body.data as { priced_by: string }[];
    expect(listed.map((e) => e.priced_by)).toEqual(['none', 'none']);
    expect((await co.call('GET', `/v1/accounts/${id}/balances`)).body.data).toEqual([]);

    const r = await submit(new URL(created.body.data.card_collector_url).pathname, 'tok_visa', newAddress());
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const billed = await co.call('POST', `/v1/accounts/${id}/events`, { body: { type: 'call' } });
    expect(billed.body.data).toMatchObject({ priced_by: 'plan' });
    expect((await co.call('GET', `/v1/accounts/${id}/balance/tokens`)).body.data.amount).toBe(995);
  });
});

async function linkRow(path: string) {
  const [row] = await t.database.db.select().from(collectorLinks).where(eq(collectorLinks.tokenHash, sha256(tokenOf(path))));
  return row;
}
