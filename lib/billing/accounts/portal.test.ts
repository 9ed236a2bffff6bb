process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';

import { eq, isNull } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { api, newCompany, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { idempotencyKeys, portalLinks } from '../../db/schema';
import { sha256 } from '../../crypto';
import { now } from '../../clock';
import { viewPortal } from './portal';
import { claimSubmission } from './link-attempts';
import { reconcileCharges } from '../settlement';
import { advance, charges, createAccount, createPlan, spend, useWebhookRecorder, type PayingCo } from '../../testing/scenario';

const t = useTestDatabase();
const local = useLocalStripe();
const startReceiver = useWebhookRecorder();


let addresses = 0;
/** Each scenario submits from an address of its own, so the per-address limit does not mix them up. */
const newAddress = () => `198.51.100.${100 + ++addresses}`;

const tokenOf = (url: string) => new URL(url).pathname.split('/').pop()!;
const submit = (url: string, token: string, address = newAddress()) => api('POST', `${new URL(url).pathname}/card`, { body: { token }, headers: { 'x-forwarded-for': address } });

async function ok(co: PayingCo, method: string, path: string, body?: unknown) {
  const r = await co.call(method, path, body === undefined ? {} : { body });
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body.data;
}

async function portalLink(co: PayingCo, accountId: string, body?: { expires_in: number }) {
  return (await ok(co, 'POST', `/v1/accounts/${accountId}/portal_link`, body)) as { id: string; url: string; expires_at: string };
}

async function activeAccount(co: PayingCo) {
  const plan = await createPlan(co, { name: 'Pro', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }] });
  // The portal shows the account's name and email: these are asserted below.
  const id = await createAccount(co, { name: 'Ada', email: 'ada@x.io', plan_id: plan.id, token: 'tok_visa' });
  return { plan, account: await ok(co, 'GET', `/v1/accounts/${id}`) };
}

/** An account whose renewal was declined: the card starts declining, then the clock passes the renewal. */
async function pastDueAccount(co: PayingCo) {
  const { account } = await activeAccount(co);
  await ok(co, 'POST', `/v1/accounts/${account.id}/card`, { token: 'tok_chargeDeclined' });
  await advance(Math.ceil((new Date(account.next_plan_renewal).getTime() - now().getTime()) / 1000));
  const fresh = await ok(co, 'GET', `/v1/accounts/${account.id}`);
  expect(fresh.plan_status).toBe('PAST_DUE');
  return fresh;
}

describe('POST /v1/accounts/{account_id}/portal_link', () => {
  it('answers a 24-hour link with a 256-bit token, of which only the hash is stored', async () => {
    const co = await newPayingCompany(t);
    const { account } = await activeAccount(co);
    const link = await portalLink(co, account.id);
    expect(Object.keys(link).sort()).toEqual(['expires_at', 'id', 'url']);
    expect(link.id).toMatch(/^pl_[0-9a-z]{26}$/);
    expect(link.url).toMatch(/^http:\/\/localhost:\d+\/portal\/[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(tokenOf(link.url), 'base64url').length).toBe(32);
    expect(new Date(link.expires_at).getTime()).toBe(now().getTime() + 24 * 3600_000);
    const rows = await t.database.db.select().from(portalLinks).where(eq(portalLinks.accountId, account.id));
    expect(rows).toHaveLength(1);
    expect(rows[0].tokenHash).toBe(sha256(tokenOf(link.url)));
    expect(JSON.stringify(rows)).not.toContain(tokenOf(link.url));
    // Every call makes a new link.
    expect((await portalLink(co, account.id)).url).not.toBe(link.url);
  });

  it('needs the company key, and finds only the caller company\'s accounts (404 otherwise)', async () => {
    const co = await newPayingCompany(t);
    const other = await newCompany(t);
    const { account } = await activeAccount(co);
    const path = `/v1/accounts/${account.id}/portal_link`;
    const anonymous = await api('POST', path);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.type).toBe('unauthorized');
    expect((await api('POST', path, { auth: { companyId: co.company.id, apiKey: 'sk_wrong' } })).status).toBe(401);
    const foreign = await other.call('POST', path);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toMatchObject({ type: 'not_found' });
    expect((await co.call('POST', '/v1/accounts/a_nothere/portal_link')).status).toBe(404);
    expect((await co.call('POST', path, { body: { extra: 1 } })).status).toBe(400);
    expect((await co.call('GET', path)).status).toBe(404);
    expect(await t.database.db.select().from(portalLinks).where(eq(portalLinks.accountId, account.id))).toEqual([]);
  });

  it('replays the same link for a repeated Idempotency-Key, sealed where it is kept', async () => {
    const co = await newPayingCompany(t);
    const { account } = await activeAccount(co);
    const headers = { 'Idempotency-Key': 'portal-1' };
    const first = await co.call('POST', `/v1/accounts/${account.id}/portal_link`, { headers });
    const again = await co.call('POST', `/v1/accounts/${account.id}/portal_link`, { headers });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(await t.database.db.select().from(portalLinks).where(eq(portalLinks.accountId, account.id))).toHaveLength(1);
    const [kept] = await t.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, 'portal-1'));
    expect(kept.responseBody).not.toContain(tokenOf(first.body.data.url));
  });
});

describe('the customer portal', () => {
  it('shows the balances (amount, pending, available), plan, next renewal, card and the last 20 charges, and no other account', async () => {
    const co = await newPayingCompany(t);
    const { plan, account } = await activeAccount(co);
    const neighbour = await createAccount(co, { name: 'Neighbour', email: 'n@x.io', token: 'tok_visa' });
    await ok(co, 'POST', `/v1/accounts/${neighbour}/deposit`, { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 777 });
    await spend(co, account.id, '12.5', { type: 'hold', denomination: 'tokens', state: 'pending' });
    for (let i = 1; i <= 21; i++) await ok(co, 'POST', `/v1/accounts/${account.id}/deposit`, { denomination: 'credits', amount_to_deposit: i, amount_to_charge: 100 + i });
    const link = await portalLink(co, account.id);
    const result = await viewPortal({ db: t.database.db, token: tokenOf(link.url) });
    if (!('view' in result)) throw new Error(JSON.stringify(result));
    const { view } = result;
    expect(view.companyName).toBe('Acme');
    expect(view.account).toEqual({ name: 'Ada', email: 'ada@x.io' });
    expect(view.balances).toEqual([
      { denomination: 'credits', amount: '231', pending: '0', available: '231' },
      { denomination: 'tokens', amount: '1000', pending: '12.5', available: '987.5' },
    ]);
    expect(view.plan).toEqual({ id: plan.id, name: plan.name, status: 'ACTIVE', charge: 2500, period: 'month', nextRenewal: new Date(account.next_plan_renewal), scheduledName: null });
    expect(view.card).toMatchObject({ brand: 'visa', last4: '4242' });
    // 22 charges (the plan start and 21 deposits): the newest 20, newest first.
    expect(view.charges).toHaveLength(20);
    expect(view.charges.map((c) => c.amount)).toEqual(Array.from({ length: 20 }, (_, i) => 121 - i));
    expect(view.charges.every((c) => c.status === 'succeeded')).toBe(true);
    expect(view.charges.some((c) => c.amount === 777)).toBe(false);
  });

  it('shows the live grants with units left, soonest expiry first, and nothing spent, expired or voided', async () => {
    const co = await newPayingCompany(t);
    const account = await createAccount(co, { name: 'Bo', email: 'bo@x.io', token: 'tok_visa' });
    const at = now().getTime();
    const inDays = (d: number) => new Date(at + d * 86_400_000).toISOString();
    await ok(co, 'POST', `/v1/accounts/${account}/balance/credits/grants`, { amount: 40, expires_at: inDays(10) });
    await ok(co, 'POST', `/v1/accounts/${account}/deposit`, { denomination: 'credits', amount_to_deposit: 100, amount_to_charge: 500 });
    await ok(co, 'POST', `/v1/accounts/${account}/balance/credits/grants`, { amount: 5, expires_at: inDays(1), priority: 0 });
    const voided = await ok(co, 'POST', `/v1/accounts/${account}/balance/tokens/grants`, { amount: 7 });
    await ok(co, 'POST', `/v1/grants/${voided.id}/void`);
    await ok(co, 'POST', `/v1/accounts/${account}/balance/tokens/grants`, { amount: 3, expires_at: inDays(3) });
    await spend(co, account, 2);
    const link = await portalLink(co, account);
    const result = await viewPortal({ db: t.database.db, token: tokenOf(link.url) });
    if (!('view' in result)) throw new Error(JSON.stringify(result));
    expect(result.view.grants.map((g) => [g.denomination, g.category, g.remaining, g.expiresAt?.toISOString() ?? null])).toEqual([
      ['credits', 'promotional', '3', inDays(1)],
      ['tokens', 'promotional', '3', inDays(3)],
      ['credits', 'promotional', '40', inDays(10)],
      ['credits', 'paid', '100', null],
    ]);
    // Past the first expiry the portal no longer shows it, whether or not the expiry was written.
    await advance(2 * 86_400);
    const later = await viewPortal({ db: t.database.db, token: tokenOf((await portalLink(co, account)).url) });
    if (!('view' in later)) throw new Error(JSON.stringify(later));
    expect(later.view.grants.map((g) => g.remaining)).toEqual(['3', '40', '100']);
  });

  it('replaces the card on file through its card call (public, 64 KiB), and stays usable', async () => {
    const co = await newPayingCompany(t);
    const { account } = await activeAccount(co);
    const link = await portalLink(co, account.id);
    const saved = await submit(link.url, 'tok_mastercard');
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(saved.body.data).toEqual({ plan_status: 'ACTIVE', payment_method: { brand: 'mastercard', last4: '4444' }, renewal: null });
    expect((await ok(co, 'GET', `/v1/accounts/${account.id}`)).payment_method).toMatchObject({ brand: 'mastercard', last4: '4444' });
    const big = await api('POST', `${new URL(link.url).pathname}/card`, { raw: JSON.stringify({ token: 'tok_visa', pad: 'x'.repeat(70 * 1024) }), headers: { 'content-type': 'application/json', 'x-forwarded-for': newAddress() } });
    expect(big.status).toBe(413);
    expect((await submit(link.url, 'tok_visa')).body.data.payment_method).toEqual({ brand: 'visa', last4: '4242' });
    const unknown = await submit(`${link.url}x`, 'tok_visa');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.type).toBe('not_found');
  });

  it('retries a past-due renewal at once with the new card: a declined one is said in plain words, a good one recovers the plan', async () => {
    const co = await newPayingCompany(t);
    const account = await pastDueAccount(co);
    const link = await portalLink(co, account.id);
    const before = await viewPortal({ db: t.database.db, token: tokenOf(link.url) });
    expect('view' in before && before.view.plan?.status).toBe('PAST_DUE');

    const declined = await submit(link.url, 'tok_chargeDeclinedInsufficientFunds');
    expect(declined.status).toBe(402);
    expect(declined.body.error).toMatchObject({ type: 'card_declined', param: null });
    expect(declined.body.error.message).toBe('Your new card is saved, but the overdue payment with it was declined. The card was declined: it has insufficient funds.');
    const [row] = await t.database.db.select().from(portalLinks).where(eq(portalLinks.tokenHash, sha256(tokenOf(link.url))));
    expect(row).toMatchObject({ failedAttempts: 1, busyUntil: null });
    expect((await ok(co, 'GET', `/v1/accounts/${account.id}`)).plan_status).toBe('PAST_DUE');

    const good = await submit(link.url, 'tok_visa');
    expect(good.status, JSON.stringify(good.body)).toBe(200);
    expect(good.body.data).toEqual({ plan_status: 'ACTIVE', payment_method: { brand: 'visa', last4: '4242' }, renewal: { status: 'paid' } });
    expect((await charges(co, account.id))[0]).toMatchObject({ reason: 'plan_renewal', status: 'succeeded', amount: 2500 });
    expect((await ok(co, 'GET', `/v1/accounts/${account.id}`)).plan_status).toBe('ACTIVE');
  });

  it('starts a plan that waits for a card, as the collector does', async () => {
    const co = await newPayingCompany(t);
    const plan = await createPlan(co, { name: 'Team', charge_amount: 3000, balances: [{ amount: 10, denomination: 'seats' }] });
    const account = await createAccount(co, { name: 'Kim', email: 'kim@x.io', plan_id: plan.id, enable_card_collector: true });
    const link = await portalLink(co, account);
    const r = await submit(link.url, 'tok_visa');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.plan_status).toBe('ACTIVE');
    expect((await charges(co, account)).map((c) => [c.amount, c.status])).toEqual([[3000, 'succeeded']]);
  });

  it('shows a waiting plan at the price its card will be charged, chosen amounts included', async () => {
    const co = await newPayingCompany(t);
    const plan = await createPlan(co, { name: 'Seats', charge_amount: 1000, balances: [{ amount: 5, denomination: 'seats', variable_unit_price: 1000 }] });
    const account = await createAccount(co, { name: 'Kim', email: 'kim@x.io', plan_id: plan.id, enable_card_collector: true, plan_variable_amounts: { seats: 10 } });
    const link = await portalLink(co, account);
    const shown = await viewPortal({ db: t.database.db, token: tokenOf(link.url) });
    expect('view' in shown && shown.view.plan).toMatchObject({ name: 'Seats', status: 'PENDING_PAYMENT_METHOD', charge: 6000 });
    const quote = 'view' in shown ? { plan_id: shown.view.plan!.id, charge: shown.view.plan!.charge } : null;
    // A page showing another price than the plan's now is not charged.
    const stale = await api('POST', `${new URL(link.url).pathname}/card`, { body: { token: 'tok_visa', quote: { ...quote, charge: 1000 } }, headers: { 'x-forwarded-for': newAddress() } });
    expect(stale.status, JSON.stringify(stale.body)).toBe(409);
    expect(stale.body.error).toMatchObject({ type: 'conflict', param: 'quote' });
    expect(await charges(co, account)).toEqual([]);
    const paid = await api('POST', `${new URL(link.url).pathname}/card`, { body: { token: 'tok_visa', quote }, headers: { 'x-forwarded-for': newAddress() } });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect((await charges(co, account)).map((c) => [c.amount, c.status])).toEqual([[6000, 'succeeded']]);
    const after = await viewPortal({ db: t.database.db, token: tokenOf(link.url) });
    expect('view' in after && after.view.plan).toMatchObject({ status: 'ACTIVE', charge: 6000 });
  });

  it('stays usable when the card it saved starts a charge whose outcome is unknown, and charges nothing twice', async () => {
    const co = await newPayingCompany(t);
    const plan = await createPlan(co, { name: 'Team', charge_amount: 3000, balances: [{ amount: 10, denomination: 'seats' }] });
    const account = await createAccount(co, { name: 'Kim', email: 'kim@x.io', plan_id: plan.id, enable_card_collector: true });
    const link = await portalLink(co, account);
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const first = await submit(link.url, 'tok_visa');
    expect(first.status, JSON.stringify(first.body)).toBe(502);
    expect(first.body.error.charge_pending).toBe(true);
    expect(first.body.error.message).toBe('Your card is saved. Its payment is still being confirmed; check back in a few minutes.');
    // While it is pending: the new card is saved, and the plan is not charged again.
    const meanwhile = await submit(link.url, 'tok_mastercard');
    expect(meanwhile.status, JSON.stringify(meanwhile.body)).toBe(502);
    expect(meanwhile.body.error).toMatchObject({ charge_pending: true, charge_id: first.body.error.charge_id });
    const [pending] = await charges(co, account);
    await fetch(`${local.url}/__control/payment_intents/${pending.processor_payment_intent_id}/complete`, { method: 'POST' });
    await advance(120);
    await reconcileCharges(t.database.db, now());
    expect((await ok(co, 'GET', `/v1/accounts/${account}`)).plan_status).toBe('ACTIVE');
    // Settled: the form works again, as it would for the rest of the link's 24 hours.
    const later = await submit(link.url, 'tok_visa');
    expect(later.status, JSON.stringify(later.body)).toBe(200);
    expect(later.body.data).toMatchObject({ plan_status: 'ACTIVE', payment_method: { brand: 'visa' } });
    expect((await charges(co, account)).map((c) => [c.amount, c.status])).toEqual([[3000, 'succeeded']]);
  });

  it('is spent after 5 failed card attempts: its card call answers 410 link_expired and the page says so; a new link works', async () => {
    const co = await newPayingCompany(t);
    const account = await pastDueAccount(co);
    const link = await portalLink(co, account.id);
    const from = newAddress();
    for (const token of ['tok_chargeDeclined', 'tok_no_such_token', 'tok_chargeDeclined', 'tok_no_such_token']) {
      const r = await submit(link.url, token, from);
      expect([402, 400], JSON.stringify(r.body)).toContain(r.status);
      expect(r.body.error.link_spent).toBeUndefined();
    }
    const fifth = await submit(link.url, 'tok_chargeDeclined', from);
    expect(fifth.status).toBe(402);
    expect(fifth.body.error).toMatchObject({ type: 'card_declined', link_spent: true });
    expect(fifth.body.error.message).toBe('The card was refused, and this link can no longer be used: 5 card attempts through it failed. Ask Acme for a new link.');

    const spent = await submit(link.url, 'tok_visa', from);
    expect(spent.status).toBe(410);
    expect(spent.body.error).toMatchObject({ type: 'link_expired', param: null });
    expect(spent.body.error.message).toContain('5 card attempts');
    expect((await ok(co, 'GET', `/v1/accounts/${account.id}`)).plan_status).toBe('PAST_DUE');
    expect(await viewPortal({ db: t.database.db, token: tokenOf(link.url) })).toEqual({ problem: 'spent', companyName: 'Acme' });

    const fresh = await portalLink(co, account.id);
    const recovered = await submit(fresh.url, 'tok_visa', from);
    expect(recovered.status, JSON.stringify(recovered.body)).toBe(200);
    expect(recovered.body.data.renewal).toEqual({ status: 'paid' });
  });

  it('expires after 24 hours: the page says so and the card call answers 410 link_expired', async () => {
    const co = await newPayingCompany(t);
    const { account } = await activeAccount(co);
    const link = await portalLink(co, account.id);
    expect('view' in (await viewPortal({ db: t.database.db, token: tokenOf(link.url) }))).toBe(true);
    await advance(24 * 3600);
    expect(await viewPortal({ db: t.database.db, token: tokenOf(link.url) })).toEqual({ problem: 'expired', companyName: 'Acme' });
    const r = await submit(link.url, 'tok_mastercard');
    expect(r.status).toBe(410);
    expect(r.body.error).toMatchObject({ type: 'link_expired', message: 'This link has expired. Ask Acme for a new link.' });
    expect((await ok(co, 'GET', `/v1/accounts/${account.id}`)).payment_method).toMatchObject({ brand: 'visa' });
    expect(await viewPortal({ db: t.database.db, token: 'not-a-link' })).toEqual({ problem: 'unknown' });
  });

  it('takes one card at a time per link: a submit while another is under way is 409', async () => {
    const co = await newPayingCompany(t);
    const { account } = await activeAccount(co);
    const link = await portalLink(co, account.id);
    await t.database.db.update(portalLinks).set({ busyUntil: new Date(now().getTime() + 60_000) }).where(eq(portalLinks.tokenHash, sha256(tokenOf(link.url))));
    const r = await submit(link.url, 'tok_mastercard');
    expect(r.status).toBe(409);
    expect(r.body.error.type).toBe('conflict');
    expect((await ok(co, 'GET', `/v1/accounts/${account.id}`)).payment_method).toMatchObject({ brand: 'visa' });
  });
});

describe('portal links: how long they work, and revoking them', () => {
  it('work for expires_in seconds, 300 to 86,400; anything else is a 400 naming expires_in and stores nothing', async () => {
    const co = await newPayingCompany(t);
    const { account } = await activeAccount(co);
    const short = await portalLink(co, account.id, { expires_in: 300 });
    expect(new Date(short.expires_at).getTime()).toBe(now().getTime() + 300_000);
    const day = await portalLink(co, account.id, { expires_in: 86_400 });
    expect(new Date(day.expires_at).getTime()).toBe(now().getTime() + 86_400_000);
    for (const expires_in of [299, 86_401, 0, -5, 600.5, '600', null]) {
      const r = await co.call('POST', `/v1/accounts/${account.id}/portal_link`, { body: { expires_in } });
      expect(r.status, JSON.stringify(expires_in)).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request', param: 'expires_in' });
    }
    expect(await t.database.db.select().from(portalLinks).where(eq(portalLinks.accountId, account.id))).toHaveLength(2);
    await advance(300);
    expect(await viewPortal({ db: t.database.db, token: tokenOf(short.url) })).toEqual({ problem: 'expired', companyName: 'Acme' });
    expect((await submit(short.url, 'tok_mastercard')).status).toBe(410);
    expect('view' in (await viewPortal({ db: t.database.db, token: tokenOf(day.url) }))).toBe(true);
  });

  it('DELETE /v1/portal_links/{id} stops one link at once: the page says it was revoked, its card call answers 410, other links still work', async () => {
    const co = await newPayingCompany(t);
    const { account } = await activeAccount(co);
    const leaked = await portalLink(co, account.id);
    const kept = await portalLink(co, account.id);
    const revoked = await co.call('DELETE', `/v1/portal_links/${leaked.id}`);
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(revoked.body.data).toEqual({ id: leaked.id, account_id: account.id, expires_at: leaked.expires_at, revoked_at: now().toISOString(), created_at: expect.any(String) });
    expect(await viewPortal({ db: t.database.db, token: tokenOf(leaked.url) })).toEqual({ problem: 'revoked', companyName: 'Acme' });
    const refused = await submit(leaked.url, 'tok_mastercard');
    expect(refused.status).toBe(410);
    expect(refused.body.error).toMatchObject({ type: 'link_expired', message: 'This link was revoked by Acme. Ask them for a new link.' });
    expect((await ok(co, 'GET', `/v1/accounts/${account.id}`)).payment_method).toMatchObject({ brand: 'visa' });
    expect((await submit(kept.url, 'tok_mastercard')).status).toBe(200);
    // Again: nothing changes, and it answers the link as it is.
    await advance(60);
    const again = await co.call('DELETE', `/v1/portal_links/${leaked.id}`);
    expect(again.status).toBe(200);
    expect(again.body.data.revoked_at).toBe(revoked.body.data.revoked_at);
  });

  it('revoking another company\'s link, or one that does not exist, is 404 and revokes nothing', async () => {
    const co = await newPayingCompany(t);
    const other = await newCompany(t);
    const { account } = await activeAccount(co);
    const link = await portalLink(co, account.id);
    const foreign = await other.call('DELETE', `/v1/portal_links/${link.id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toMatchObject({ type: 'not_found', param: 'portal_link_id' });
    expect((await other.call('POST', `/v1/accounts/${account.id}/portal_links/revoke`)).status).toBe(404);
    expect((await co.call('DELETE', '/v1/portal_links/pl_nothere')).status).toBe(404);
    expect((await api('DELETE', `/v1/portal_links/${link.id}`)).status).toBe(401);
    expect('view' in (await viewPortal({ db: t.database.db, token: tokenOf(link.url) }))).toBe(true);
  });

  it('POST .../portal_links/revoke stops every live link of the account, counts them, and leaves other accounts\' and later links working', async () => {
    const co = await newPayingCompany(t);
    const { account } = await activeAccount(co);
    const neighbour = await createAccount(co, { name: 'Neighbour', email: 'n@x.io', token: 'tok_visa' });
    const expired = await portalLink(co, account.id, { expires_in: 300 });
    await advance(301);
    const links = [await portalLink(co, account.id), await portalLink(co, account.id), await portalLink(co, account.id)];
    expect((await co.call('DELETE', `/v1/portal_links/${links[2].id}`)).status).toBe(200);
    const theirs = await portalLink(co, neighbour);
    const r = await co.call('POST', `/v1/accounts/${account.id}/portal_links/revoke`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toEqual({ account_id: account.id, revoked: 2 });
    for (const link of [...links, expired]) expect((await submit(link.url, 'tok_mastercard')).status).toBe(410);
    expect((await viewPortal({ db: t.database.db, token: tokenOf(links[0].url) })) as unknown).toEqual({ problem: 'revoked', companyName: 'Acme' });
    expect((await viewPortal({ db: t.database.db, token: tokenOf(expired.url) })) as unknown).toEqual({ problem: 'expired', companyName: 'Acme' });
    expect((await submit(theirs.url, 'tok_mastercard')).status).toBe(200);
    expect((await co.call('POST', `/v1/accounts/${account.id}/portal_links/revoke`)).body.data.revoked).toBe(0);
    const fresh = await portalLink(co, account.id);
    expect((await submit(fresh.url, 'tok_mastercard')).status).toBe(200);
  });

  it('a card submission cannot start once its link is revoked, even when it read the link before', async () => {
    const co = await newPayingCompany(t);
    const { account } = await activeAccount(co);
    const link = await portalLink(co, account.id);
    // Revoked between the submission's read of the link and its claim: the claim is refused.
    const [row] = await t.database.db.select().from(portalLinks).where(eq(portalLinks.id, link.id));
    await t.database.db.update(portalLinks).set({ revokedAt: now() }).where(eq(portalLinks.id, link.id));
    expect(await claimSubmission(t.database.db, portalLinks, row.id, now(), isNull(portalLinks.revokedAt))).toBe(false);
    expect((await submit(link.url, 'tok_mastercard')).status).toBe(410);
    expect((await ok(co, 'GET', `/v1/accounts/${account.id}`)).payment_method).toMatchObject({ brand: 'visa' });
  });
});

describe('card_changed', () => {
  it('is sent whenever a hosted page saves a card: the portal and the collector, with the new card and the one it replaced; not for the API\'s own card call', async () => {
    const co = await newPayingCompany(t);
    const receiver = await startReceiver();
    const hook = await ok(co, 'POST', '/v1/companies/{company}/webhooks', { url: receiver.url });
    await ok(co, 'POST', `/v1/companies/{company}/webhooks/${hook.id}/subscribe/card_changed`);
    const { account } = await activeAccount(co);
    // The company's own card call is not a hosted page: no card_changed.
    await ok(co, 'POST', `/v1/accounts/${account.id}/card`, { token: 'tok_visa' });
    const link = await portalLink(co, account.id);
    expect((await submit(link.url, 'tok_mastercard')).status).toBe(200);
    const collector = await ok(co, 'POST', `/v1/accounts/${account.id}/card_collector`);
    const collected = await api('POST', `${new URL(collector.card_collector_url).pathname}/submit`, { body: { token: 'tok_amex' }, headers: { 'x-forwarded-for': newAddress() } });
    expect(collected.status, JSON.stringify(collected.body)).toBe(200);
    // A declined card is not saved: nothing is sent for it.
    expect((await submit(link.url, 'tok_no_such_token')).status).toBe(400);
    await advance(0);
    // Sent side by side: in the order of their pages here.
    const sent = receiver.requests.map((r) => r.json).sort((a, b) => String(a.data.source).localeCompare(String(b.data.source)));
    expect(sent).toEqual([
      {
        webhook_id: hook.id, topic: 'card_changed', account_id: account.id, denomination: 'USD', balance: '0',
        data: { source: 'collector', link_id: expect.stringMatching(/^cl_/), payment_method: expect.objectContaining({ brand: 'amex' }), previous_payment_method: expect.objectContaining({ brand: 'mastercard', last4: '4444' }) },
      },
      {
        webhook_id: hook.id, topic: 'card_changed', account_id: account.id, denomination: 'USD', balance: '0',
        data: { source: 'portal', link_id: link.id, payment_method: { brand: 'mastercard', last4: '4444', exp_month: expect.any(Number), exp_year: expect.any(Number) }, previous_payment_method: { brand: 'visa', last4: '4242', exp_month: expect.any(Number), exp_year: expect.any(Number) } },
      },
    ]);
  });
});
