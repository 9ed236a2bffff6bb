import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../lib/testing/webhook-receiver';
import { Billing, BillingApiError, BillingError, WebhookVerificationError, verifyWebhook, type Account, type Plan } from '../src/index';
import { useSdkServer } from './fixture';

const server = useSdkServer();

/** Every item of a list, through `for await`. */
async function all<T>(list: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of list) out.push(item);
  return out;
}

describe('the SDK against a started server', () => {
  let billing: Billing;
  let companyId: string;
  let apiKey: string;
  /** Requests the client sent, to see how it paged. */
  const sent: string[] = [];
  const plans: Record<string, Plan> = {};
  let account: Account;

  beforeAll(async () => {
    const co = await server.newCompany();
    companyId = co.companyId;
    apiKey = co.apiKey;
    billing = new Billing({
      baseUrl: server.url,
      companyId,
      apiKey,
      fetch: (input, init) => {
        sent.push(`${init?.method} ${String(input).slice(server.url.length)}`);
        return fetch(input, init);
      },
    });
  });

  it('companies: the operator registers one; its key reads it back; the wrong key or no token is a typed error', async () => {
    const page = await billing.companies.list();
    expect(page.has_more).toBe(false);
    expect(page.data).toEqual([expect.objectContaining({ id: companyId, processor_configured: true })]);

    const wrong = await new Billing({ baseUrl: server.url, companyId, apiKey: 'sk_wrong' }).companies.list().then(
      () => null,
      (e: unknown) => e,
    );
    expect(wrong).toBeInstanceOf(BillingApiError);
    expect(wrong).toMatchObject({ status: 401, type: 'unauthorized', param: null });
    expect((wrong as BillingApiError).request_id).toMatch(/^req_/);
    expect((wrong as BillingApiError).request_id).toBe((wrong as BillingApiError).headers.get('request-id'));

    // Operator calls need the operator token, company calls the company's key: said before any request.
    await expect(billing.companies.create({ name: 'X', email: 'x@example.com' })).rejects.toThrow(/adminToken/);
    await expect(server.admin().accounts.get('a_1')).rejects.toBeInstanceOf(BillingError);
    const refused = await server.admin({ adminToken: 'not-the-token' }).companies.create({ name: 'X', email: 'x@example.com' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 401, type: 'unauthorized' });
  });

  it('API keys: issue, list, revoke; a revoked key is refused', async () => {
    const key = await billing.apiKeys.create();
    expect(key.api_key).toBeTruthy();
    const second = new Billing({ baseUrl: server.url, companyId, apiKey: key.api_key });
    expect((await second.companies.list()).data[0].id).toBe(companyId);
    const keys = await all(billing.apiKeys.list({ limit: 1 }));
    expect(keys.map((k) => k.id)).toContain(key.id);
    expect(keys.length).toBeGreaterThanOrEqual(2);
    const revoked = await billing.apiKeys.revoke(key.id);
    expect(revoked.revoked_at).toBeTruthy();
    await expect(second.companies.list()).rejects.toMatchObject({ status: 401, type: 'unauthorized' });
  });

  it('plans: create, get, list', async () => {
    const rules = [{ type: 'chat', amount: 10, denomination: 'tokens' }];
    plans.pro = await billing.plans.create({ name: 'Pro', charge_amount: 2000, billing_period: 'month', overage_charge_mode: 'postpay', balances: [{ amount: 1000, denomination: 'tokens', overage_charge_amount: 2 }], billing_rules: rules, flags: { priority_support: true } });
    plans.max = await billing.plans.create({ name: 'Max', charge_amount: 5000, balances: [{ amount: 5000, denomination: 'tokens' }], billing_rules: rules, flags: {} });
    expect(plans.pro).toMatchObject({ name: 'Pro', charge_amount: 2000, billing_period: 'month', flags: { priority_support: true } });
    expect(await billing.plans.get(plans.pro.id)).toEqual(plans.pro);
    expect((await all(billing.plans.list({ limit: 1 }))).map((p) => p.id)).toEqual([plans.max.id, plans.pro.id]);
  });

  it('accounts: create on a plan with a card, get, update, list with for await over several pages', async () => {
    account = await billing.accounts.create({ name: 'Ada', email: 'ada@example.com', plan_id: plans.pro.id, token: 'tok_visa', metadata: { crm: '8812' } });
    expect(account).toMatchObject({ plan_status: 'ACTIVE', plan_id: plans.pro.id, payment_method: { brand: 'visa', last4: '4242' } });
    expect(await billing.accounts.get(account.id)).toMatchObject({ id: account.id, email: 'ada@example.com', plan_id: plans.pro.id, metadata: { crm: '8812' } });
    const updated = await billing.accounts.update(account.id, { email: 'ada.l@example.com', metadata: { crm: '8813' } });
    expect(updated).toMatchObject({ email: 'ada.l@example.com', metadata: { crm: '8813' } });
    for (let i = 0; i < 4; i++) await billing.accounts.create({ name: `Page ${i}`, email: `page${i}@example.com` });

    const before = sent.length;
    const listed = await all(billing.accounts.list({ limit: 2 }));
    expect(listed.length).toBe(5);
    expect(new Set(listed.map((a) => a.id)).size).toBe(5);
    expect(listed[listed.length - 1].id).toBe(account.id);
    const pages = sent.slice(before);
    expect(pages.length).toBe(3);
    expect(pages[0]).toBe(`GET /v1/companies/${companyId}/accounts?limit=2`);
    expect(pages[1]).toBe(`GET /v1/companies/${companyId}/accounts?limit=2&starting_after=${listed[1].id}`);
    expect(pages[2]).toBe(`GET /v1/companies/${companyId}/accounts?limit=2&starting_after=${listed[3].id}`);

    // Awaited, a list is its first page; pages() gives them one by one.
    const first = await billing.accounts.list({ limit: 2 });
    expect(first.data.map((a) => a.id)).toEqual(listed.slice(0, 2).map((a) => a.id));
    expect(first.has_more).toBe(true);
    const sizes: number[] = [];
    for await (const page of billing.accounts.list({ limit: 2 }).pages()) sizes.push(page.data.length);
    expect(sizes).toEqual([2, 2, 1]);
    expect(await billing.accounts.list({ limit: 3, starting_after: listed[1].id }).toArray()).toEqual(listed.slice(2));
    expect((await billing.accounts.list({ email: 'page2@example.com' })).data.map((a) => a.name)).toEqual(['Page 2']);
  });

  it('accounts: an external_id set at creation finds the account in one call, is unique, and clears with null', async () => {
    const own = await billing.accounts.create({ name: 'Grace', email: 'grace@example.com', external_id: 'crm-grace' });
    expect(own.external_id).toBe('crm-grace');
    const before = sent.length;
    expect((await billing.accounts.list({ external_id: 'crm-grace' })).data.map((a) => a.id)).toEqual([own.id]);
    expect(sent.slice(before)).toEqual([`GET /v1/companies/${companyId}/accounts?external_id=crm-grace`]);
    const dup = await billing.accounts.create({ name: 'Copy', email: 'copy@example.com', external_id: 'crm-grace' }).catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(BillingApiError);
    expect(dup).toMatchObject({ status: 409, type: 'conflict', param: 'external_id' });
    expect((await billing.accounts.update(own.id, { external_id: null })).external_id).toBeNull();
    expect((await billing.accounts.list({ external_id: 'crm-grace' })).data).toEqual([]);
  });

  it('cards, the collector, the customer portal and changeplan', async () => {
    const card = await billing.accounts.attachCard(account.id, { token: 'tok_mastercard' });
    expect(card.payment_method).toMatchObject({ brand: 'mastercard' });
    const link = await billing.accounts.createCardCollectorLink(account.id);
    expect(link.card_collector_url).toMatch(/\/collect\//);
    const portal = await billing.accounts.createPortalLink(account.id);
    expect(portal.url).toMatch(/\/portal\/[A-Za-z0-9_-]{43}$/);
    expect(new Date(portal.expires_at).getTime() - Date.now()).toBeGreaterThan(23 * 3600_000);
    const page = await fetch(portal.url.replace(/^https?:\/\/[^/]+/, server.url));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Recent charges');
    const short = await billing.accounts.createPortalLink(account.id, { expires_in: 600 });
    expect(new Date(short.expires_at).getTime() - Date.now()).toBeLessThanOrEqual(600_000);
    const revoked = await billing.accounts.revokePortalLink(portal.id);
    expect(revoked).toMatchObject({ id: portal.id, account_id: account.id, revoked_at: expect.any(String) });
    expect(await billing.accounts.revokePortalLinks(account.id)).toEqual({ account_id: account.id, revoked: 1 });
    const gone = await fetch(short.url.replace(/^https?:\/\/[^/]+/, server.url));
    expect(await gone.text()).toContain('This link was revoked');
    const preview = await billing.accounts.previewPlanChange(account.id, { plan_id: plans.max.id });
    expect(preview).toMatchObject({ plan_id: plans.max.id, effective: 'now' });
    const upgraded = await billing.accounts.changePlan(account.id, { plan_id: plans.max.id });
    expect(upgraded).toMatchObject({ plan_id: plans.max.id, plan_status: 'ACTIVE' });
    // An upgrade is charged at once, less the unused time of the old plan's period.
    const charge = (await billing.charges.list(account.id)).data[0];
    expect(charge).toMatchObject({ reason: 'plan_change', status: 'succeeded', amount: preview.charge_amount });
    expect(charge.amount).toBeGreaterThan(0);
    expect(charge.amount).toBeLessThan(5000);
  });

  it('balances: create, grant, get, list, a card deposit through the local Stripe server; transactions and charges', async () => {
    const fresh = await billing.balances.create(account.id, 'credits');
    expect(fresh).toMatchObject({ denomination: 'credits', amount: 0 });
    const granted = await billing.balances.create(account.id, 'credits', { amount: '2.5', reason: 'welcome' });
    expect(granted.amount).toBe(2.5);
    const deposited = await billing.balances.deposit(account.id, { denomination: 'credits', amount_to_deposit: 100, amount_to_charge: 1500 });
    expect(deposited.amount).toBe(102.5);
    expect(await billing.balances.get(account.id, 'credits')).toMatchObject({ amount: 102.5, available: 102.5 });
    expect((await all(billing.balances.list(account.id))).map((b) => b.denomination).sort()).toEqual(['credits', 'tokens']);
    const charge = (await billing.charges.list(account.id, { limit: 1 })).data[0];
    expect(charge).toMatchObject({ amount: 1500, reason: 'deposit', status: 'succeeded', processor_payment_intent_id: expect.stringMatching(/^pi_/) });
    const ledger = await all(billing.transactions.list(account.id, { denomination: 'credits', limit: 1 }));
    expect(ledger.map((tx) => [tx.type, tx.amount])).toEqual([
      ['deposit', 100],
      ['grant', 2.5],
    ]);
    expect(ledger[0]).toMatchObject({ starting_balance: 2.5, ending_balance: 102.5, charge_id: charge.id });
    const declined = await billing.balances.deposit((await billing.accounts.create({ name: 'NoCard', email: 'nocard@example.com' })).id, { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 100 }).catch((e: unknown) => e);
    expect(declined).toMatchObject({ status: 402, type: 'payment_method_required' });
  });

  it('grants: create with an expiry and a priority, list by status, void, and the credits report', async () => {
    const soon = new Date(Date.parse((await billing.balances.get(account.id, 'credits')).created_at) + 7 * 86_400_000).toISOString();
    const promo = await billing.grants.create(account.id, 'credits', { amount: 40, priority: 10, expires_at: soon, reason: 'Launch week' }, { idempotencyKey: 'sdk-grant-1' });
    expect(promo).toMatchObject({ amount: 40, remaining: 40, category: 'promotional', source: 'grant', priority: 10, status: 'live', expires_at: soon });
    expect(await billing.grants.create(account.id, 'credits', { amount: 40, priority: 10, expires_at: soon, reason: 'Launch week' }, { idempotencyKey: 'sdk-grant-1' })).toEqual(promo);
    expect((await billing.balances.get(account.id, 'credits')).next_expiry).toEqual({ expires_at: soon, amount: 40 });
    expect((await all(billing.grants.list(account.id, 'credits'))).map((g) => g.id)).toContain(promo.id);
    const voided = await billing.grants.void(promo.id);
    expect(voided).toMatchObject({ id: promo.id, status: 'voided', remaining: 0 });
    expect((await all(billing.grants.list(account.id, 'credits', { status: 'voided' }))).map((g) => g.id)).toEqual([promo.id]);
    const report = await billing.grants.report();
    expect(report.denominations.find((d) => d.denomination === 'credits')).toMatchObject({ voided: { paid: 0, promotional: 40 } });
    await expect(billing.grants.create(account.id, 'credits', { amount: 5, priority: 101 })).rejects.toMatchObject({ status: 400, param: 'priority' });
  });

  it('usage: an account\'s and the company\'s by day and type, exact; a bad group_by is a typed 400', async () => {
    await billing.events.record(account.id, { type: 'sdk-usage', cost_override_amount: '0.1', cost_override_denomination: 'credits' });
    await billing.events.record(account.id, { type: 'sdk-usage', cost_override_amount: '0.2', cost_override_denomination: 'credits' });
    const own = await billing.usage.account(account.id, { granularity: 'day', group_by: 'type' });
    expect(own.filter((r) => r.group === 'sdk-usage')).toEqual([expect.objectContaining({ denomination: 'credits', events: 2, cost: 0.3, quantities: {} })]);
    const company = await billing.usage.company({ account_id: account.id, granularity: 'month' });
    expect(company.find((r) => r.group === 'sdk-usage')).toMatchObject({ events: 2, cost: 0.3 });
    await expect(billing.usage.account(account.id, { group_by: 'state' })).rejects.toMatchObject({ status: 400, param: 'group_by' });
  });

  it('spendLimits: set and read them typed; an event past a reject limit is a typed 402 spend_limit_exceeded, and check says so', async () => {
    // An account of its own: the other tests list this company's rejected events.
    const spender = await billing.accounts.create({ name: 'Spender', email: 'spender@example.com' });
    const set = await billing.spendLimits.set(spender.id, [{ denomination: 'sdk-spend', period: 'day', limit: '1.5', action: 'reject' }]);
    expect(set).toEqual([expect.objectContaining({ denomination: 'sdk-spend', period: 'day', limit: 1.5, action: 'reject', spent: 0 })]);
    await billing.events.record(spender.id, { type: 'sdk-spend', cost_override_amount: 1, cost_override_denomination: 'sdk-spend' });
    expect((await billing.events.check(spender.id, { type: 'sdk-spend', cost_override_amount: 1, cost_override_denomination: 'sdk-spend', gate_on_balance: false })).reason).toBe('spend_limit');
    const refused = await billing.events.record(spender.id, { type: 'sdk-spend', cost_override_amount: 1, cost_override_denomination: 'sdk-spend' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BillingApiError);
    expect(refused).toMatchObject({ status: 402, type: 'spend_limit_exceeded' });
    expect((refused as BillingApiError).rejected_event_id).toMatch(/^ev_/);
    expect((await billing.spendLimits.get(spender.id))[0].spent).toBe(1);
    await expect(billing.spendLimits.set(spender.id, [{ denomination: 'sdk-spend', period: 'year' as 'day', limit: 1, action: 'reject' }])).rejects.toMatchObject({ status: 400, param: '[0].period' });
    expect(await billing.spendLimits.set(spender.id, [])).toEqual([]);
  });

  it('auto_refill: set monthly (refilled at once), schedule a change, increase mid-month, remove', async () => {
    const set = await billing.refills.set(account.id, 'minutes', { amount: 100, usd_charge: 1000, refill_period: 'monthly' });
    expect(set).toMatchObject({ amount: 100, refill_amount: 100, refill_usd_amount: 1000 });
    const scheduled = await billing.refills.scheduleChange(account.id, { denomination: 'minutes', amount: 50, usd_charge: 600 });
    expect(scheduled).toMatchObject({ denomination: 'minutes', amount: 50, usd_charge: 600 });
    // The balance path's fields, refill_period included, are taken here too.
    const named = await billing.refills.scheduleChange(account.id, { denomination: 'minutes', amount: 60, usd_charge: 700, refill_period: 'monthly' });
    expect(named).toMatchObject({ denomination: 'minutes', amount: 60, usd_charge: 700, effective_at: scheduled.effective_at });
    const increased = await billing.refills.modifyMidMonth(account.id, { denomination: 'minutes', amount: 300, usd_charge: 2400 });
    expect(increased).toMatchObject({ refill_amount: 300 });
    const removed = await billing.refills.remove(account.id, 'minutes');
    expect(removed).toMatchObject({ refill_amount: 0, next_periodic_refill: null });
    const invalid = await billing.refills.modifyMidMonth(account.id, { denomination: 'minutes', amount: 1, usd_charge: 1 }).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ status: 400, type: 'invalid_request' });
  });

  it('events: one, a batch, a pending one completed, the list with filters, and a gated 402 as a typed error', async () => {
    const one = await billing.events.record(account.id, { type: 'chat', metadata: { model: 'small' } });
    expect(one).toMatchObject({ type: 'chat', state: 'complete', priced_by: 'plan', cost: { amount: 10, denomination: 'tokens' } });
    const tokens = one.balance!.amount;
    const batch = await billing.events.recordBatch([
      { account_id: account.id, type: 'chat' },
      { account_id: account.id, type: 'upload', cost_override: { amount: 5.5, denomination: 'tokens' } },
    ]);
    expect(batch.map((e) => e.type)).toEqual(['chat', 'upload']);
    expect((await billing.balances.get(account.id, 'tokens')).amount).toBe(tokens - 15.5);

    const pending = await billing.events.record(account.id, { type: 'hold', cost_override_amount: 1, cost_override_denomination: 'credits', state: 'pending' });
    expect(pending).toMatchObject({ state: 'pending', expires_at: expect.any(String) });
    expect(await billing.events.update(pending.id, { state: 'complete' })).toMatchObject({ state: 'complete' });
    expect((await billing.events.get(pending.id)).state).toBe('complete');
    const again = await billing.events.update(pending.id, { state: 'cancelled' }).catch((e: unknown) => e);
    expect(again).toMatchObject({ status: 409, type: 'conflict' });

    const gated = await billing.events.record(account.id, { type: 'render', cost_override_amount: 1e6, cost_override_denomination: 'tokens', gate_on_balance: true }).catch((e: unknown) => e);
    expect(gated).toBeInstanceOf(BillingApiError);
    const err = gated as BillingApiError;
    expect(err).toMatchObject({ status: 402, type: 'insufficient_balance', param: null });
    expect(err.rejected_event_id).toMatch(/^ev_/);
    expect(err.error?.rejected_event_id).toBe(err.rejected_event_id);
    expect(err.request_id).toMatch(/^req_/);
    expect(await billing.events.get(err.rejected_event_id!)).toMatchObject({ state: 'rejected', type: 'render' });

    const rejected = await all(billing.events.list({ account_id: account.id, state: 'rejected' }));
    expect(rejected.map((e) => e.id)).toEqual([err.rejected_event_id]);
    const chats = await all(billing.events.list({ account_id: account.id, type: 'chat', limit: 1 }));
    expect(chats.length).toBe(2);
    const bad = await billing.events.record(account.id, { type: '' }).catch((e: unknown) => e);
    expect(bad).toMatchObject({ status: 400, type: 'invalid_request', param: 'type' });
  });

  it('events: typed quantities and properties, a check that records nothing, a hold settled at the actual, the list by property', async () => {
    const check = await billing.events.check(account.id, { type: 'render', quantities: { frames: 3 }, properties: { quality: 'hd', beta: true }, cost_override_amount: 2, cost_override_denomination: 'tokens' });
    expect(check).toEqual({ allowed: true, cost: { amount: 2, denomination: 'tokens' }, available: expect.any(Number), reason: null });
    const held = await billing.events.record(account.id, { type: 'render', quantities: { frames: 3 }, properties: { quality: 'hd', beta: true }, cost_override_amount: 2, cost_override_denomination: 'tokens', state: 'pending', expires_in: 600 });
    expect(held).toMatchObject({ quantities: { frames: 3 }, properties: { quality: 'hd', beta: true }, held_cost: { amount: 2 } });
    const settled = await billing.events.update(held.id, { state: 'complete', cost_override_amount: 1.25 });
    expect(settled).toMatchObject({ cost: { amount: 1.25 }, held_cost: { amount: 2 } });
    const hd = await all(billing.events.list({ account_id: account.id, properties: { quality: 'hd' } }));
    expect(hd.map((e) => e.id)).toEqual([held.id]);
    expect(await all(billing.events.list({ account_id: account.id, properties: { quality: 'sd' } }))).toEqual([]);
  });

  describe('webhooks', () => {
    let receiver: Receiver;
    beforeAll(async () => {
      receiver = await startReceiver();
    });
    afterAll(async () => {
      await receiver?.close();
    });

    it('register, subscribe, update, list; a real delivery verifies with the signature helper; deliveries and a re-send', async () => {
      const hook = await billing.webhooks.create({ url: receiver.url, username: 'acme', password: 's3cret' });
      expect(hook.secret).toMatch(/^whsec_/);
      expect(await billing.webhooks.subscribe(hook.id, 'negative_balance')).toEqual({ webhook_id: hook.id, topic: 'negative_balance' });
      await billing.webhooks.subscribe(hook.id, 'balance_change');
      expect((await all(billing.webhooks.listSubscriptions(hook.id))).map((s) => s.topic).sort()).toEqual(['balance_change', 'negative_balance']);
      expect(await billing.webhooks.unsubscribe(hook.id, 'balance_change')).toMatchObject({ topic: 'balance_change', deleted: true });
      expect(await billing.webhooks.update(hook.id, { username: 'acme-billing' })).toMatchObject({ username: 'acme-billing' });
      expect((await billing.webhooks.get(hook.id)).topics).toEqual(['negative_balance']);
      const byType = await billing.webhooks.registerByType({ type: 'payment_failed', url: `${receiver.url}/by-type` });
      expect(byType).toMatchObject({ style: 'type', topics: ['payment_failed'] });
      expect((await all(billing.webhooks.list({ limit: 1 }))).map((w) => w.id)).toEqual([byType.id, hook.id]);

      // Spend past zero: negative_balance is delivered, signed with the webhook's secret.
      const spender = await billing.accounts.create({ name: 'Spender', email: 'spender@example.com' });
      await billing.balances.create(spender.id, 'credits', { amount: 1 });
      await billing.events.record(spender.id, { type: 'spend', cost_override_amount: 3, cost_override_denomination: 'credits' });
      await server.admin().testClock.advance(0);
      const [delivery] = await receiver.waitFor(1, 10_000);
      const payload = await verifyWebhook(delivery.body, delivery.headers, hook.secret);
      expect(payload).toMatchObject({ webhook_id: hook.id, topic: 'negative_balance', account_id: spender.id, balance: '-2' });
      // Node's request headers (a plain object) and Fetch Headers both work.
      expect(await verifyWebhook(delivery.body, new Headers(delivery.headers), hook.secret)).toEqual(payload);
      expect(await verifyWebhook(new TextEncoder().encode(delivery.body), delivery.headers, hook.secret)).toEqual(payload);

      await expect(verifyWebhook(delivery.body.replace('-2', '-1'), delivery.headers, hook.secret)).rejects.toBeInstanceOf(WebhookVerificationError);
      await expect(verifyWebhook(delivery.body, delivery.headers, byType.secret)).rejects.toThrow(/signature/);
      await expect(verifyWebhook(delivery.body, { ...delivery.headers, 'webhook-id': 'whd_other' }, hook.secret)).rejects.toThrow(/signature/);
      const later = new Date((Number(delivery.headers['webhook-timestamp']) + 301) * 1000);
      await expect(verifyWebhook(delivery.body, delivery.headers, hook.secret, { now: later })).rejects.toThrow(/tolerance/);
      expect(await verifyWebhook(delivery.body, delivery.headers, hook.secret, { now: later, toleranceSeconds: 600 })).toEqual(payload);

      const deliveries = await all(billing.webhooks.listDeliveries(hook.id, { status: 'succeeded' }));
      expect(deliveries.map((d) => d.id)).toEqual([delivery.headers['webhook-id']]);
      expect(await billing.webhooks.getDelivery(hook.id, deliveries[0].id)).toMatchObject({ status: 'succeeded', attempts: 1 });
      const resent = await billing.webhooks.retryDelivery(hook.id, deliveries[0].id);
      expect(resent.attempts_log.length).toBe(2);
      const attempts = await all(billing.webhooks.listDeliveryAttempts(hook.id, deliveries[0].id, { limit: 1 }));
      expect(attempts.map((a) => a.id)).toEqual(resent.attempts_log.map((a) => a.id).reverse());
      const [, second] = await receiver.waitFor(2, 10_000);
      expect(second.headers['webhook-id']).toBe(delivery.headers['webhook-id']);
      expect(await verifyWebhook(second.body, second.headers, hook.secret)).toMatchObject({ topic: 'negative_balance' });

      expect(await billing.webhooks.delete(byType.id)).toMatchObject({ id: byType.id, deleted: true });
      await expect(billing.webhooks.get(byType.id)).rejects.toMatchObject({ status: 404, type: 'not_found' });
    });
  });

  it('the test clock: read and advance (operator)', async () => {
    const admin = server.admin();
    const now = await admin.testClock.get();
    const later = await admin.testClock.advance(60);
    expect(Date.parse(later.now) - Date.parse(now.now)).toBe(60_000);
  });

  it('the low-level request and paginate reach any documented path, typed by it', async () => {
    const got = await billing.request('get', '/v1/accounts/{account_id}', { path: { account_id: account.id } });
    expect(got.data.id).toBe(account.id);
    const body = await billing.request('get', '/v1/companies/{company_id}/events', { query: { account_id: account.id, limit: 2 } });
    expect(body.data.length).toBe(2);
    expect(body.has_more).toBe(true);
    const short = await all(billing.paginate('/v1/webhooks', { query: { limit: 1 } }));
    expect(short.length).toBe(1);
    const doc = await billing.request('get', '/v1/openapi.json');
    expect(doc.openapi).toBe('3.1.0');
    const health = await billing.request('get', '/health');
    expect(health.data.status).toBe('ok');
    const key = 'low-level-grant';
    const a = await billing.request('post', '/v1/accounts/{account_id}/balance/{denomination}', { path: { account_id: account.id, denomination: 'credits' }, body: { amount: 1 }, idempotencyKey: key });
    const b = await billing.request('post', '/v1/accounts/{account_id}/balance/{denomination}', { path: { account_id: account.id, denomination: 'credits' }, body: { amount: 1 }, idempotencyKey: key });
    expect(b).toEqual(a);
  });
});
