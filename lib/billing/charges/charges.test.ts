import { beforeAll, describe, expect, it } from 'vitest';
import { newCompany, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';

const t = useTestDatabase();
const local = useLocalStripe();
process.env.STRIPE_TIMEOUT_MS = '700';

type Co = Awaited<ReturnType<typeof newPayingCompany>>;

async function account(co: Co, extra: Record<string, unknown> = {}) {
  const r = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Grace Hopper', email: 'grace@navy.mil', ...extra } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

const counts = async (co: Co) => (await local.control(`state?key=${co.processorKey}`)).account;

describe('processor customers and cards', () => {
  let co: Co;
  beforeAll(async () => {
    co = await newPayingCompany(t);
  });

  it('creates a processor customer with name, email and metadata[account_id]', async () => {
    const a = await account(co);
    expect(a.processor_id).toMatch(/^cus_/);
    const customer = await local.stripe(co.processorKey).customers.retrieve(a.processor_id);
    expect(customer).toMatchObject({ name: 'Grace Hopper', email: 'grace@navy.mil', metadata: { account_id: a.id } });
    const given = await account(co, { processor_id: a.processor_id });
    expect(given.processor_id).toBe(a.processor_id);
    expect((await counts(co)).customers).toBe(1);
  });

  it('attaches a card token as the default payment method and returns only a summary', async () => {
    const a = await account(co);
    const r = await co.call('POST', `/accounts/${a.id}/card`, { body: { token: 'tok_visa' } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ account_id: a.id, payment_method: { id: expect.stringMatching(/^pm_/), brand: 'visa', last4: '4242', exp_month: expect.any(Number), exp_year: expect.any(Number) } });
    const customer = await local.stripe(co.processorKey).customers.retrieve(a.processor_id);
    expect((customer as { invoice_settings: { default_payment_method: string } }).invoice_settings.default_payment_method).toBe(r.body.data.payment_method.id);
    const read = await co.call('GET', `/v1/accounts/${a.id}`);
    expect(read.body.data.payment_method.last4).toBe('4242');
    const atCreate = await account(co, { token: 'tok_mastercard' });
    expect(atCreate.payment_method).toMatchObject({ brand: 'mastercard', last4: '4444' });
  });

  it('refuses bad card input clearly', async () => {
    const a = await account(co);
    const bad = await co.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 'tok_nonsense' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('token');
    expect((await co.call('POST', `/v1/accounts/${a.id}/card`, { body: {} })).body.error.param).toBe('token');
    expect((await co.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 5 } })).status).toBe(400);
    const other = await newCompany(t);
    expect((await other.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 'tok_visa' } })).status).toBe(404);
    const noKey = await newCompany(t);
    const plain = (await noKey.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'N', email: 'n@x.io' } })).body.data;
    expect(plain.processor_id).toBeNull();
    const refused = await noKey.call('POST', `/v1/accounts/${plain.id}/card`, { body: { token: 'tok_visa' } });
    expect(refused.status).toBe(400);
  });
});

describe('charges', () => {
  let co: Co;
  beforeAll(async () => {
    co = await newPayingCompany(t);
  });

  it('charges the card first and grants units only after success', async () => {
    const a = await account(co, { token: 'tok_visa' });
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 100, amount_to_charge: 1999 } });
    expect(r.status).toBe(200);
    expect(r.body.data.amount).toBe(100);
    const charges = (await co.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({ amount: 1999, currency: 'usd', reason: 'deposit', status: 'succeeded', failure_code: null });
    const pi = await local.stripe(co.processorKey).paymentIntents.retrieve(charges[0].processor_payment_intent_id);
    expect(pi).toMatchObject({ amount: 1999, currency: 'usd', status: 'succeeded', customer: a.processor_id, metadata: { charge_id: charges[0].id } });
    const ledger = (await co.call('GET', `/v1/accounts/${a.id}/transactions`)).body.data;
    expect(ledger[0]).toMatchObject({ type: 'deposit', amount: 100, charge_id: charges[0].id });
  });

  it('records a decline, grants nothing and answers 402 card_declined', async () => {
    const a = await account(co, { token: 'tok_chargeDeclined' });
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 100, amount_to_charge: 500 } });
    expect(r.status).toBe(402);
    expect(r.body.error.type).toBe('card_declined');
    expect(r.body.error.message).toMatch(/declined/);
    expect((await co.call('GET', `/v1/accounts/${a.id}/balance/credits`)).status).toBe(404);
    const [charge] = (await co.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(charge).toMatchObject({ status: 'failed', failure_code: 'generic_decline', amount: 500 });
  });

  it('answers 402 payment_method_required without a card', async () => {
    const a = await account(co);
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 100 } });
    expect(r.status).toBe(402);
    expect(r.body.error.type).toBe('payment_method_required');
  });

  it('maps a processor outage to 502 processor_error without granting', async () => {
    const a = await account(co, { token: 'tok_visa' });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 5, amount_to_charge: 300 } });
    expect(r.status).toBe(502);
    expect(r.body.error.type).toBe('processor_error');
    expect(JSON.stringify(r.body)).not.toMatch(/at \w+ \(|stack/);
    expect((await co.call('GET', `/v1/accounts/${a.id}/balance/credits`)).status).toBe(404);
    const [charge] = (await co.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(charge.status).toBe('failed');
  });

  it('keeps a charge pending while the processor cannot be asked, then reconciles it', async () => {
    const a = await account(co, { token: 'tok_visa' });
    await local.control('fail', { status: 500, count: 2, path_prefix: '/v1/payment_intents' });
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 5, amount_to_charge: 300 } });
    expect(r.status).toBe(502);
    const [charge] = (await co.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(charge.status).toBe('pending');
    const { reconcilePendingCharges } = await import('./charges');
    await reconcilePendingCharges(t.database.db, new Date(Date.now() + 120_000));
    const [after] = (await co.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(after.status).toBe('failed');
    expect((await co.call('GET', `/v1/accounts/${a.id}/balance/credits`)).status).toBe(404);
  });

  it('resolves a timeout by retrieving the PaymentIntent, not by charging again', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    await local.control('fail', { delay_ms: 1500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', after: true });
    const r = await fresh.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 7, amount_to_charge: 700 } });
    expect(r.status).toBe(200);
    expect(r.body.data.amount).toBe(7);
    expect((await counts(fresh)).payment_intents).toBe(1);
    const [charge] = (await fresh.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(charge.status).toBe('succeeded');
  });

  it('charges once for a repeated request with the same Idempotency-Key', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    const body = { denomination: 'credits', amount_to_deposit: 10, amount_to_charge: 1000 };
    const headers = { 'Idempotency-Key': 'dep-1' };
    const first = await fresh.call('POST', `/v1/accounts/${a.id}/deposit`, { body, headers });
    const second = await fresh.call('POST', `/v1/accounts/${a.id}/deposit`, { body, headers });
    expect(second.body).toEqual(first.body);
    expect((await counts(fresh)).payment_intents).toBe(1);
    expect((await fresh.call('GET', `/v1/accounts/${a.id}/balance/credits`)).body.data.amount).toBe(10);
  });

  it('reuses the charge and its processor key when work is retried with the same work key', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    const { chargeAccount } = await import('./charges');
    const { getAccount } = await import('../accounts/accounts');
    const acct = await getAccount({ db: t.database.db, companyId: fresh.company.id, accountId: a.id });
    const req = {
      db: t.database.db,
      company: fresh.company,
      account: acct,
      amount: 250,
      reason: 'refill_monthly',
      description: 'retried work',
      effects: [{ kind: 'grant' as const, denomination: 'credits', amount: '25', type: 'refill', description: 'retried work' }],
      now: new Date(),
      workKey: 'job:retried-work',
    };
    const first = await chargeAccount(req);
    const second = await chargeAccount(req);
    expect(first.ok && second.ok).toBe(true);
    expect(second.charge.id).toBe(first.charge.id);
    expect((await counts(fresh)).payment_intents).toBe(1);
    expect((await fresh.call('GET', `/v1/accounts/${a.id}/balance/credits`)).body.data.amount).toBe(25);
    expect((await fresh.call('GET', `/v1/accounts/${a.id}/charges`)).body.data).toHaveLength(1);
  });

  it('records a failed charge when no card is on file', async () => {
    const a = await account(co);
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 100 } });
    expect(r.status).toBe(402);
    const [charge] = (await co.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(charge).toMatchObject({ status: 'failed', failure_code: 'payment_method_required', amount: 100 });
  });
});

