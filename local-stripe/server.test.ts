/**
 * Drives the local Stripe with the real `stripe` SDK, so these tests also pin
 * down that the SDK understands our answers (error classes, replays, …).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormParseError, encodeForm, parseForm, parseQuery } from './form';
import { type LocalStripeServer, startLocalStripe } from './server';

let server: LocalStripeServer;
const FUTURE_YEAR = String(new Date().getUTCFullYear() + 3);

beforeAll(async () => {
  server = await startLocalStripe({ port: 0 });
});

afterAll(async () => {
  await server.close();
});

/** A fresh account per test: each distinct key is its own namespace. */
function newKey(): string {
  return `sk_test_${randomBytes(8).toString('hex')}`;
}

function sdk(key: string, extra: Partial<Stripe.StripeConfig> = {}): Stripe {
  return new Stripe(key, { host: '127.0.0.1', port: server.port, protocol: 'http', maxNetworkRetries: 0, ...extra });
}

async function control(path: string, body: unknown): Promise<void> {
  const res = await fetch(`${server.url}/__control/${path}`, { method: 'POST', body: JSON.stringify(body) });
  expect(res.status).toBe(200);
}

interface AccountCounts {
  customers: number;
  payment_methods: number;
  payment_intents: number;
  payment_intents_by_status: Record<string, number>;
  charges: number;
}

async function counts(key: string): Promise<AccountCounts> {
  const res = await fetch(`${server.url}/__control/state?key=${key}`);
  const json = (await res.json()) as { account: AccountCounts };
  return json.account;
}

/** Resolves to the thrown error (fails the test if the promise resolves). */
async function failure(p: Promise<unknown>): Promise<Stripe.errors.StripeError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(Stripe.errors.StripeError);
    return err as Stripe.errors.StripeError;
  }
  throw new Error('expected the call to fail');
}

/** A customer with an attached card (by test token) set as invoice default. */
async function customerWithCard(stripe: Stripe, token = 'tok_visa') {
  const customer = await stripe.customers.create({ name: 'Ada', email: 'ada@example.com' });
  const pm = await stripe.paymentMethods.create({ type: 'card', card: { token } });
  await stripe.paymentMethods.attach(pm.id, { customer: customer.id });
  await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: pm.id } });
  return { customer, pm };
}

describe('form parser', () => {
  it('parses nested brackets into objects', () => {
    expect(
      parseForm(
        'name=Ada+Lovelace&metadata[account_id]=a_1&invoice_settings[default_payment_method]=pm_1&billing_details[address][line1]=1%20Main%20St',
      ),
    ).toEqual({
      name: 'Ada Lovelace',
      metadata: { account_id: 'a_1' },
      invoice_settings: { default_payment_method: 'pm_1' },
      billing_details: { address: { line1: '1 Main St' } },
    });
  });

  it('parses indexed and [] arrays, including arrays of objects', () => {
    expect(parseForm('expand[0]=customer&expand[1]=latest_charge')).toEqual({ expand: ['customer', 'latest_charge'] });
    expect(parseForm('expand[]=a&expand[]=b')).toEqual({ expand: ['a', 'b'] });
    expect(parseForm('items[1][price]=p_2&items[0][price]=p_1&items[0][quantity]=3')).toEqual({
      items: [{ price: 'p_1', quantity: '3' }, { price: 'p_2' }],
    });
    expect(parseForm('card[token]=tok_visa')).toEqual({ card: { token: 'tok_visa' } });
  });

  it('keeps numeric metadata keys as an object and handles encoded brackets', () => {
    expect(parseForm('metadata[0]=x&metadata[1]=y')).toEqual({ metadata: { '0': 'x', '1': 'y' } });
    expect(parseForm('metadata%5Bk%5D=v&empty=')).toEqual({ metadata: { k: 'v' }, empty: '' });
  });

  it('parses query strings the same way and round-trips the SDK encoding', () => {
    expect(parseQuery('?limit=3&customer=cus_1&expand[0]=data.customer')).toEqual({
      limit: '3',
      customer: 'cus_1',
      expand: ['data.customer'],
    });
    const params = { a: 'x y&z', b: { c: ['1', '2'], d: { e: 'é' } } };
    expect(parseForm(encodeForm(params))).toEqual(params);
  });

  it('rejects conflicting shapes and prototype keys', () => {
    expect(() => parseForm('a=1&a[b]=2')).toThrow(FormParseError);
    expect(() => parseForm('__proto__[polluted]=1')).toThrow(FormParseError);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('customers', () => {
  it('creates, retrieves, updates (metadata merge) and lists', async () => {
    const stripe = sdk(newKey());
    const created = await stripe.customers.create({
      name: 'Ada',
      email: 'ada@example.com',
      description: 'first',
      metadata: { account_id: 'a_1', plan: 'pro' },
    });
    expect(created.id).toMatch(/^cus_/);
    expect(created).toMatchObject({ object: 'customer', livemode: false, name: 'Ada', metadata: { account_id: 'a_1' } });
    expect(typeof created.created).toBe('number');

    const fetched = await stripe.customers.retrieve(created.id);
    expect(fetched).toEqual(created);

    const updated = await stripe.customers.update(created.id, {
      name: 'Ada L.',
      metadata: { plan: '', region: 'eu' },
    });
    expect(updated.name).toBe('Ada L.');
    expect(updated.email).toBe('ada@example.com');
    expect(updated.metadata).toEqual({ account_id: 'a_1', region: 'eu' });

    await stripe.customers.create({ name: 'B' });
    await stripe.customers.create({ name: 'C' });
    const page = await stripe.customers.list({ limit: 2 });
    expect(page.object).toBe('list');
    expect(page.url).toBe('/v1/customers');
    expect(page.data.map((c) => c.name)).toEqual(['C', 'B']);
    expect(page.has_more).toBe(true);
    const all: string[] = [];
    for await (const c of stripe.customers.list({ limit: 2 })) all.push(c.id);
    expect(all).toHaveLength(3);
  });

  it('rejects unknown parameters like Stripe', async () => {
    const stripe = sdk(newKey());
    const err = await failure(stripe.customers.create({ nmae: 'typo' } as Stripe.CustomerCreateParams));
    expect(err.type).toBe('StripeInvalidRequestError');
    expect(err.statusCode).toBe(400);
    expect(err.code).toBe('parameter_unknown');
    expect(err.param).toBe('nmae');
  });
});

describe('auth and accounts', () => {
  it('answers 401 for a missing or malformed key', async () => {
    const err = await failure(sdk('not_a_key').customers.create({ name: 'x' }));
    expect(err.type).toBe('StripeAuthenticationError');
    expect(err.statusCode).toBe(401);

    const res = await fetch(`${server.url}/v1/customers`);
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toMatch(/did not provide an API key/);
  });

  it('keeps each key in its own namespace (404 resource_missing across keys)', async () => {
    const a = sdk(newKey());
    const b = sdk(newKey());
    const customer = await a.customers.create({ name: 'mine' });
    const err = await failure(b.customers.retrieve(customer.id));
    expect(err.type).toBe('StripeInvalidRequestError');
    expect(err.statusCode).toBe(404);
    expect(err.code).toBe('resource_missing');
  });

  it('accepts a publishable key only for tokens and payment methods, in the same account', async () => {
    const suffix = randomBytes(6).toString('hex');
    const pk = sdk(`pk_test_${suffix}`);
    const sk = sdk(`sk_test_${suffix}`);
    const token = await pk.tokens.create({ card: { number: '4242424242424242', exp_month: '12', exp_year: FUTURE_YEAR, cvc: '123' } });
    const pm = await pk.paymentMethods.create({ type: 'card', card: { token: token.id } });
    expect((await sk.paymentMethods.retrieve(pm.id)).id).toBe(pm.id);
    const err = await failure(pk.customers.create({ name: 'nope' }));
    expect(err.type).toBe('StripeAuthenticationError');
  });

  it('answers unknown URLs with a Stripe 404', async () => {
    const res = await fetch(`${server.url}/v1/subscriptions`, { headers: { Authorization: `Bearer ${newKey()}` } });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toMatch(/Unrecognized request URL \(GET: \/v1\/subscriptions\)/);
  });
});

describe('tokens', () => {
  it('tokenizes a card and derives the brand', async () => {
    const stripe = sdk(newKey());
    const token = await stripe.tokens.create({
      card: { number: '5555 5555 5555 4444', exp_month: '4', exp_year: FUTURE_YEAR, cvc: '123' },
    });
    expect(token.id).toMatch(/^tok_/);
    expect(token).toMatchObject({ object: 'token', type: 'card', used: false });
    expect(token.card).toMatchObject({ brand: 'MasterCard', last4: '4444', exp_month: 4, exp_year: Number(FUTURE_YEAR) });
  });

  it('fails the Luhn check with a 402 incorrect_number card error', async () => {
    const stripe = sdk(newKey());
    const err = await failure(
      stripe.tokens.create({
        card: { number: '4242424242424241', exp_month: '12', exp_year: FUTURE_YEAR, cvc: '123' },
      }),
    );
    expect(err.type).toBe('StripeCardError');
    expect(err.statusCode).toBe(402);
    expect(err.code).toBe('incorrect_number');
  });

  it('rejects an expired card with invalid_expiry_year', async () => {
    const stripe = sdk(newKey());
    const err = await failure(
      stripe.tokens.create({
        card: { number: '4242424242424242', exp_month: '1', exp_year: '2020', cvc: '123' },
      }),
    );
    expect(err.type).toBe('StripeCardError');
    expect(err.code).toBe('invalid_expiry_year');
  });

  it('lets a created token make only one payment method', async () => {
    const stripe = sdk(newKey());
    const token = await stripe.tokens.create({
      card: { number: '4242424242424242', exp_month: '12', exp_year: FUTURE_YEAR },
    });
    await stripe.paymentMethods.create({ type: 'card', card: { token: token.id } });
    const err = await failure(stripe.paymentMethods.create({ type: 'card', card: { token: token.id } }));
    expect(err.code).toBe('token_already_used');
  });
});

describe('payment methods and payment intents', () => {
  it('token → payment method → attach → default → payment intent succeeds', async () => {
    const stripe = sdk(newKey());
    const { customer, pm } = await customerWithCard(stripe);
    expect(pm).toMatchObject({ object: 'payment_method', type: 'card', customer: null });
    expect(pm.card).toMatchObject({ brand: 'visa', last4: '4242', funding: 'credit', country: 'US' });

    const fresh = await stripe.customers.retrieve(customer.id);
    expect((fresh as Stripe.Customer).invoice_settings.default_payment_method).toBe(pm.id);
    const listed = await stripe.customers.listPaymentMethods(customer.id, { type: 'card' });
    expect(listed.data.map((p) => p.id)).toEqual([pm.id]);
    const listed2 = await stripe.paymentMethods.list({ customer: customer.id, type: 'card' });
    expect(listed2.data[0].customer).toBe(customer.id);

    const pi = await stripe.paymentIntents.create({
      amount: 1999,
      currency: 'usd',
      customer: customer.id,
      payment_method: pm.id,
      automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
      confirm: true,
      off_session: true,
      description: 'March usage',
      metadata: { invoice_id: 'inv_1' },
    });
    expect(pi.id).toMatch(/^pi_/);
    expect(pi).toMatchObject({
      object: 'payment_intent',
      status: 'succeeded',
      amount: 1999,
      amount_received: 1999,
      currency: 'usd',
      customer: customer.id,
      payment_method: pm.id,
      metadata: { invoice_id: 'inv_1' },
    });
    expect(pi.latest_charge).toMatch(/^ch_/);
    expect((await stripe.paymentIntents.retrieve(pi.id)).status).toBe('succeeded');

    const expanded = await stripe.paymentIntents.retrieve(pi.id, { expand: ['latest_charge'] });
    expect(expanded.latest_charge).toMatchObject({ object: 'charge', paid: true, amount: 1999 });
  });

  it('creates without confirm (requires_confirmation), then confirms', async () => {
    const stripe = sdk(newKey());
    const { customer, pm } = await customerWithCard(stripe);
    const pi = await stripe.paymentIntents.create({ amount: 500, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' } });
    expect(pi.status).toBe('requires_confirmation');
    const confirmed = await stripe.paymentIntents.confirm(pi.id);
    expect(confirmed.status).toBe('succeeded');
    const again = await failure(stripe.paymentIntents.confirm(pi.id));
    expect(again.code).toBe('payment_intent_unexpected_state');
  });

  it('refuses to confirm an intent that takes the Dashboard\'s methods without a return_url, as Stripe does', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe);
    const before = await counts(key);
    const refused = await failure(stripe.paymentIntents.create({ amount: 500, currency: 'usd', customer: customer.id, payment_method: pm.id, confirm: true, off_session: true }));
    expect(refused.type).toBe('StripeInvalidRequestError');
    expect(refused.message).toMatch(/A `return_url` must be specified/);
    expect((await counts(key)).payment_intents).toBe(before.payment_intents);
    // Redirects turned off, or a return_url: confirmed.
    const never = await stripe.paymentIntents.create({ amount: 500, currency: 'usd', customer: customer.id, payment_method: pm.id, confirm: true, automatic_payment_methods: { enabled: true, allow_redirects: 'never' } });
    expect(never.status).toBe('succeeded');
    const unconfirmed = await stripe.paymentIntents.create({ amount: 500, currency: 'usd', customer: customer.id, payment_method: pm.id });
    expect((await failure(stripe.paymentIntents.confirm(unconfirmed.id))).message).toMatch(/return_url/);
    expect((await stripe.paymentIntents.confirm(unconfirmed.id, { return_url: 'https://example.test/back' })).status).toBe('succeeded');
  });

  it('declines with a StripeCardError that carries the payment intent', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe, 'tok_chargeDeclined');
    const err = await failure(
      stripe.paymentIntents.create({
        amount: 1000,
        currency: 'usd',
        customer: customer.id,
        payment_method: pm.id,
        automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
      confirm: true,
        off_session: true,
      }),
    );
    expect(err).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect(err.type).toBe('StripeCardError');
    expect(err.statusCode).toBe(402);
    expect(err.code).toBe('card_declined');
    expect(err.decline_code).toBe('generic_decline');
    expect(err.payment_intent?.id).toMatch(/^pi_/);
    expect(err.payment_intent?.status).toBe('requires_payment_method');
    expect(err.payment_intent?.last_payment_error?.decline_code).toBe('generic_decline');

    const state = await counts(key);
    expect(state.payment_intents_by_status.succeeded ?? 0).toBe(0);
    const list = await stripe.paymentIntents.list({ customer: customer.id });
    expect(list.data.map((p) => p.status)).toEqual(['requires_payment_method']);
  });

  it('reports insufficient funds and expired cards with their codes', async () => {
    const stripe = sdk(newKey());
    const { customer, pm } = await customerWithCard(stripe, 'tok_chargeDeclinedInsufficientFunds');
    const err = await failure(
      stripe.paymentIntents.create({ amount: 1000, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true }),
    );
    expect(err.decline_code).toBe('insufficient_funds');

    const token = await stripe.tokens.create({
      card: { number: '4000000000000069', exp_month: '12', exp_year: FUTURE_YEAR, cvc: '123' },
    });
    const expiredPm = await stripe.paymentMethods.create({ type: 'card', card: { token: token.id } });
    await stripe.paymentMethods.attach(expiredPm.id, { customer: customer.id });
    const err2 = await failure(
      stripe.paymentIntents.create({ amount: 1000, currency: 'usd', customer: customer.id, payment_method: expiredPm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true }),
    );
    expect(err2.code).toBe('expired_card');
  });

  it('refuses a payment method that is not attached to the intent’s customer', async () => {
    const stripe = sdk(newKey());
    const { customer } = await customerWithCard(stripe);
    const loose = await stripe.paymentMethods.create({ type: 'card', card: { token: 'tok_visa' } });
    const err = await failure(
      stripe.paymentIntents.create({ amount: 100, currency: 'usd', customer: customer.id, payment_method: loose.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true }),
    );
    expect(err.type).toBe('StripeInvalidRequestError');
    expect(err.statusCode).toBe(400);

    const other = await stripe.customers.create({ name: 'other' });
    const { pm } = await customerWithCard(stripe);
    const err2 = await failure(stripe.paymentMethods.attach(pm.id, { customer: other.id }));
    expect(err2.statusCode).toBe(400);
  });

  it('does not fall back to invoice_settings.default_payment_method (Stripe does not either)', async () => {
    const stripe = sdk(newKey());
    const { customer } = await customerWithCard(stripe);
    const err = await failure(
      stripe.paymentIntents.create({ amount: 100, currency: 'usd', customer: customer.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true, off_session: true }),
    );
    expect(err.param).toBe('payment_method');
  });

  it('accepts the magic test payment methods', async () => {
    const stripe = sdk(newKey());
    const customer = await stripe.customers.create({ name: 'magic' });
    const attached = await stripe.paymentMethods.attach('pm_card_visa', { customer: customer.id });
    expect(attached.id).not.toBe('pm_card_visa');
    expect(attached.customer).toBe(customer.id);
    const pi = await stripe.paymentIntents.create({ amount: 100, currency: 'usd', payment_method: 'pm_card_mastercard', automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true });
    expect(pi.status).toBe('succeeded');
    const err = await failure(
      stripe.paymentIntents.create({ amount: 100, currency: 'usd', payment_method: 'pm_card_chargeDeclined', automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true }),
    );
    expect(err.code).toBe('card_declined');
    const detached = await stripe.paymentMethods.detach(attached.id);
    expect(detached.customer).toBeNull();
  });

  it('validates amount and currency', async () => {
    const stripe = sdk(newKey());
    expect((await failure(stripe.paymentIntents.create({ amount: 0, currency: 'usd' }))).param).toBe('amount');
    expect((await failure(stripe.paymentIntents.create({ amount: 49, currency: 'usd' }))).code).toBe('amount_too_small');
    expect((await failure(stripe.paymentIntents.create({ amount: 100, currency: 'eur' }))).param).toBe('currency');
  });
});

describe('idempotency', () => {
  it('replays the stored answer for a repeated key and creates one intent', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe);
    const params: Stripe.PaymentIntentCreateParams = {
      amount: 2500,
      currency: 'usd',
      customer: customer.id,
      payment_method: pm.id,
      automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
      confirm: true,
      off_session: true,
    };
    const first = await stripe.paymentIntents.create(params, { idempotencyKey: 'charge-inv-1' });
    const second = await stripe.paymentIntents.create(params, { idempotencyKey: 'charge-inv-1' });
    expect(second.id).toBe(first.id);
    expect(second.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(first.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    expect((await counts(key)).payment_intents).toBe(1);
  });

  it('replays a decline too (same status and body)', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe, 'tok_chargeDeclined');
    const params = { amount: 700, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true };
    const a = await failure(stripe.paymentIntents.create(params, { idempotencyKey: 'decline-1' }));
    const b = await failure(stripe.paymentIntents.create(params, { idempotencyKey: 'decline-1' }));
    expect(b.type).toBe('StripeCardError');
    expect(b.payment_intent?.id).toBe(a.payment_intent?.id);
    expect((await counts(key)).payment_intents).toBe(1);
  });

  it('rejects the same key with a different body', async () => {
    const stripe = sdk(newKey());
    await stripe.customers.create({ name: 'one' }, { idempotencyKey: 'cust-1' });
    const err = await failure(stripe.customers.create({ name: 'two' }, { idempotencyKey: 'cust-1' }));
    expect(err).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect(err.type).toBe('StripeIdempotencyError');
    expect(err.statusCode).toBe(400);
  });

  it('scopes keys per account', async () => {
    const a = await sdk(newKey()).customers.create({ name: 'a' }, { idempotencyKey: 'shared' });
    const b = await sdk(newKey()).customers.create({ name: 'b' }, { idempotencyKey: 'shared' });
    expect(a.id).not.toBe(b.id);
  });
});

describe('failure injection', () => {
  it('answers an injected 500 as StripeAPIError without creating anything', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe);
    await control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents' });
    const err = await failure(
      stripe.paymentIntents.create(
        { amount: 100, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true },
        { idempotencyKey: 'retry-me' },
      ),
    );
    expect(err).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(err.type).toBe('StripeAPIError');
    expect(err.statusCode).toBe(500);
    expect((await counts(key)).payment_intents).toBe(0);

    // The failure was not saved under the key, so a retry with it goes through.
    const pi = await stripe.paymentIntents.create(
      { amount: 100, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true },
      { idempotencyKey: 'retry-me' },
    );
    expect(pi.status).toBe('succeeded');
  });

  it('delay "after": the charge happens, the caller times out, and a retrieve finds it', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe);
    await control('fail', { delay_ms: 1500, count: 1, path_prefix: '/v1/payment_intents', after: true });
    const impatient = sdk(key, { timeout: 500 });
    const err = await failure(
      impatient.paymentIntents.create({
        amount: 4200,
        currency: 'usd',
        customer: customer.id,
        payment_method: pm.id,
        automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
      confirm: true,
        off_session: true,
      }),
    );
    expect(err).toBeInstanceOf(Stripe.errors.StripeConnectionError);
    expect(err.type).toBe('StripeConnectionError');

    const list = await stripe.paymentIntents.list({ customer: customer.id });
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).toMatchObject({ status: 'succeeded', amount: 4200 });
  });

  it('delay before processing: a caller that gives up leaves nothing behind', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe);
    await control('fail', { delay_ms: 700, count: 1, path_prefix: '/v1/payment_intents' });
    const err = await failure(
      sdk(key, { timeout: 200 }).paymentIntents.create({
        amount: 100,
        currency: 'usd',
        customer: customer.id,
        payment_method: pm.id,
        automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
      confirm: true,
      }),
    );
    expect(err.type).toBe('StripeConnectionError');
    await new Promise((r) => setTimeout(r, 900));
    expect((await counts(key)).payment_intents).toBe(0);
  });

  it('delay "late": the charge is made after the caller gave up and after its look-up', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe);
    await control('fail', { delay_ms: 700, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', late: true });
    const params = { amount: 900, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true, off_session: true };
    const err = await failure(sdk(key, { timeout: 200 }).paymentIntents.create(params, { idempotencyKey: 'late-1' }));
    expect(err.type).toBe('StripeConnectionError');
    // Looked up at once: nothing yet, and the key is still in flight.
    expect((await stripe.paymentIntents.list({ customer: customer.id })).data).toHaveLength(0);
    expect((await failure(stripe.paymentIntents.create(params, { idempotencyKey: 'late-1' }))).code).toBe('idempotency_key_in_use');
    await new Promise((r) => setTimeout(r, 800));
    const [made] = (await stripe.paymentIntents.list({ customer: customer.id })).data;
    expect(made).toMatchObject({ status: 'succeeded', amount: 900 });
    // The same key now answers with what was done, and charges nothing more.
    expect((await stripe.paymentIntents.create(params, { idempotencyKey: 'late-1' })).id).toBe(made.id);
    expect((await counts(key)).payment_intents).toBe(1);
  });

  it('processing: an intent waits for the bank until completed, with the card\'s outcome', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const good = await customerWithCard(stripe);
    const bad = await customerWithCard(stripe, 'tok_chargeDeclined');
    await control('fail', { processing: true, count: 2, path_prefix: '/v1/payment_intents', method: 'POST' });
    const paid = await stripe.paymentIntents.create({ amount: 500, currency: 'usd', customer: good.customer.id, payment_method: good.pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true, off_session: true });
    const declined = await stripe.paymentIntents.create({ amount: 500, currency: 'usd', customer: bad.customer.id, payment_method: bad.pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true, off_session: true });
    expect([paid.status, declined.status]).toEqual(['processing', 'processing']);
    expect((await failure(stripe.paymentIntents.confirm(paid.id))).code).toBe('payment_intent_unexpected_state');
    for (const id of [paid.id, declined.id]) {
      const res = await fetch(`${server.url}/__control/payment_intents/${id}/complete`, { method: 'POST' });
      expect(res.status).toBe(200);
    }
    expect(await stripe.paymentIntents.retrieve(paid.id)).toMatchObject({ status: 'succeeded', amount_received: 500 });
    const after = await stripe.paymentIntents.retrieve(declined.id);
    expect(after).toMatchObject({ status: 'requires_payment_method', last_payment_error: { code: 'card_declined' } });
    expect((await fetch(`${server.url}/__control/payment_intents/${paid.id}/complete`, { method: 'POST' })).status).toBe(404);
  });

  it('answers 409 to a same-key request while the first is still in flight', async () => {
    const key = newKey();
    const stripe = sdk(key);
    await control('fail', { delay_ms: 400, count: 1, path_prefix: '/v1/customers', method: 'POST' });
    const first = stripe.customers.create({ name: 'slow' }, { idempotencyKey: 'dup' });
    await new Promise((r) => setTimeout(r, 100));
    const err = await failure(stripe.customers.create({ name: 'slow' }, { idempotencyKey: 'dup' }));
    expect(err.statusCode).toBe(409);
    expect(err.code).toBe('idempotency_key_in_use');
    const created = await first;
    const replay = await stripe.customers.create({ name: 'slow' }, { idempotencyKey: 'dup' });
    expect(replay.id).toBe(created.id);
  });

  it('lose: the payment is made, the connection is reset (the SDK resends once), and a replay under the key tells what was done', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe);
    await control('fail', { lose: true, count: 2, path_prefix: '/v1/payment_intents', method: 'POST' });
    const params = { amount: 700, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' as const }, confirm: true, off_session: true };
    const err = await failure(stripe.paymentIntents.create(params, { idempotencyKey: 'lost-1' }));
    expect(err).toBeInstanceOf(Stripe.errors.StripeConnectionError);
    expect((await counts(key)).payment_intents).toBe(1);
    const replay = await stripe.paymentIntents.create(params, { idempotencyKey: 'lost-1' });
    expect(replay.status).toBe('succeeded');
    expect((await counts(key)).payment_intents).toBe(1);
  });

  it('refusals: 401 and 403 for one key come before the idempotency cache; 409 is idempotency_key_in_use', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe);
    const params = { amount: 900, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' as const }, confirm: true, off_session: true };
    const paid = await stripe.paymentIntents.create(params, { idempotencyKey: 'refused-1' });
    await control('fail', { status: 401, count: 1, key });
    await control('fail', { status: 403, count: 1, key });
    expect(await failure(stripe.paymentIntents.create(params, { idempotencyKey: 'refused-1' }))).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect(await failure(stripe.paymentIntents.create(params, { idempotencyKey: 'refused-1' }))).toBeInstanceOf(Stripe.errors.StripePermissionError);
    // Another key is not refused.
    const other = sdk(newKey());
    expect((await other.customers.create({})).id).toMatch(/^cus_/);
    await control('fail', { status: 409, count: 1, path_prefix: '/v1/payment_intents' });
    const inUse = await failure(stripe.paymentIntents.create(params, { idempotencyKey: 'refused-1' }));
    expect(inUse.statusCode).toBe(409);
    expect(inUse.code).toBe('idempotency_key_in_use');
    expect((await stripe.paymentIntents.create(params, { idempotencyKey: 'refused-1' })).id).toBe(paid.id);
  });

  it('the clock: keys expire after 24 hours of the processor\'s time, and lists filter on created', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe);
    const params = { amount: 800, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' as const }, confirm: true, off_session: true };
    const first = await stripe.paymentIntents.create(params, { idempotencyKey: 'day-old' });
    await control('clock', { advance_ms: 25 * 3600_000 });
    const second = await stripe.paymentIntents.create(params, { idempotencyKey: 'day-old' });
    expect(second.id).not.toBe(first.id);
    const recent = await stripe.paymentIntents.list({ customer: customer.id, created: { gte: second.created } });
    expect(recent.data.map((p) => p.id)).toEqual([second.id]);
    expect((await stripe.paymentIntents.list({ customer: customer.id, created: { lt: second.created } })).data.map((p) => p.id)).toEqual([first.id]);
    expect((await fetch(`${server.url}/__control/clock`, { method: 'POST', body: JSON.stringify({ advance_ms: -1 }) })).status).toBe(400);
  });

  it('drops pending failure rules on DELETE /__control/fail, keeping everything else', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const { customer, pm } = await customerWithCard(stripe);
    await control('fail', { status: 500, count: 5, path_prefix: '/v1/payment_intents' });
    const res = await fetch(`${server.url}/__control/fail`, { method: 'DELETE' });
    expect(await res.json()).toEqual({ ok: true, cleared: 1 });
    const pi = await stripe.paymentIntents.create({ amount: 100, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true });
    expect(pi.status).toBe('succeeded');
    expect((await counts(key)).customers).toBe(1);
  });

  it('goes away and comes back on the same port, keeping its objects and idempotency keys', async () => {
    const own = await startLocalStripe({ port: 0 });
    try {
      const key = newKey();
      const stripe = new Stripe(key, { host: '127.0.0.1', port: own.port, protocol: 'http', maxNetworkRetries: 0 });
      const { customer, pm } = await customerWithCard(stripe);
      const params = { amount: 700, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true, off_session: true };
      const first = await stripe.paymentIntents.create(params, { idempotencyKey: 'before-outage' });

      await own.suspend();
      const refused = await failure(stripe.paymentIntents.create(params, { idempotencyKey: 'during-outage' }));
      expect(refused).toBeInstanceOf(Stripe.errors.StripeConnectionError);
      await own.resume();

      expect((await stripe.paymentIntents.create(params, { idempotencyKey: 'before-outage' })).id).toBe(first.id);
      const list = await stripe.paymentIntents.list({ customer: customer.id });
      expect(list.data.map((p) => p.id)).toEqual([first.id]);
    } finally {
      await own.close();
    }
  });

  it('cuts an answer under way when it goes away: the charge stands, the caller sees a broken connection', async () => {
    const own = await startLocalStripe({ port: 0 });
    try {
      const key = newKey();
      const stripe = new Stripe(key, { host: '127.0.0.1', port: own.port, protocol: 'http', maxNetworkRetries: 0 });
      const { customer, pm } = await customerWithCard(stripe);
      const rule = await fetch(`${own.url}/__control/fail`, { method: 'POST', body: JSON.stringify({ delay_ms: 2000, after: true, path_prefix: '/v1/payment_intents', method: 'POST' }) });
      expect(rule.status).toBe(200);
      const pending = failure(stripe.paymentIntents.create({ amount: 300, currency: 'usd', customer: customer.id, payment_method: pm.id, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true }));
      await new Promise((r) => setTimeout(r, 200));
      await own.suspend();
      expect(await pending).toBeInstanceOf(Stripe.errors.StripeConnectionError);
      await own.resume();
      const [made] = (await stripe.paymentIntents.list({ customer: customer.id })).data;
      expect(made).toMatchObject({ status: 'succeeded', amount: 300 });
    } finally {
      await own.close();
    }
  });

  it('POST /__control/outage answers, refuses connections for duration_ms, then listens again', async () => {
    const own = await startLocalStripe({ port: 0 });
    try {
      const bad = await fetch(`${own.url}/__control/outage`, { method: 'POST', body: JSON.stringify({ duration_ms: 0 }) });
      expect(bad.status).toBe(400);
      const res = await fetch(`${own.url}/__control/outage`, { method: 'POST', body: JSON.stringify({ duration_ms: 600 }) });
      expect(await res.json()).toEqual({ ok: true, duration_ms: 600 });
      await new Promise((r) => setTimeout(r, 150));
      const during = await fetch(`${own.url}/__control/state`).then(
        (r) => r.status,
        (err: { cause?: { code?: string } }) => err.cause?.code,
      );
      expect(during).toBe('ECONNREFUSED');
      await new Promise((r) => setTimeout(r, 800));
      expect((await fetch(`${own.url}/__control/state`)).status).toBe(200);
    } finally {
      await own.close();
    }
  });

  it('exposes state per account and resets everything', async () => {
    const key = newKey();
    const stripe = sdk(key);
    const customer = await stripe.customers.create({ name: 'gone soon' });
    const res = await fetch(`${server.url}/__control/state`);
    const json = (await res.json()) as { accounts: Record<string, AccountCounts> };
    expect(json.accounts[key.replace(/^sk_/, '')].customers).toBe(1);

    await control('reset', {});
    expect((await counts(key)).customers).toBe(0);
    expect((await failure(stripe.customers.retrieve(customer.id))).statusCode).toBe(404);
  });
});

describe('Stripe.js stand-in', () => {
  it('is served as JavaScript with CORS', async () => {
    const res = await fetch(`${server.url}/stripe-js/v3`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/javascript/);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    const text = await res.text();
    expect(text).toBe(fs.readFileSync(new URL('./stripe-js.js', import.meta.url), 'utf8'));
    expect(text).toContain('window.Stripe = Stripe');
    // It must at least be valid JavaScript.
    expect(() => new Function(text)).not.toThrow();
  });

  it('answers CORS preflights so the browser can call /v1/tokens', async () => {
    const res = await fetch(`${server.url}/v1/tokens`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://localhost:3000', 'Access-Control-Request-Headers': 'authorization,content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
  });
});
