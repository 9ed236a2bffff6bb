import { afterEach, expect } from 'vitest';
import type { Db } from '../db/client';
import { now } from '../clock';
import { ledgerSums } from '../billing/balances/balances';
import { api, newCompany, newPayingCompany } from './harness';
import { startReceiver, type Receiver } from './webhook-receiver';

/**
 * The vocabulary of domain tests: a company's plans, accounts, usage and charges through the
 * API, the test clock, and webhook receivers. Each step checks that the API accepted it, so a
 * scenario reads as the story it tells.
 */
export type Co = Awaited<ReturnType<typeof newCompany>>;
/** A company with a processor namespace of its own on the local Stripe server (newPayingCompany). */
export type PayingCo = Awaited<ReturnType<typeof newPayingCompany>>;

/** Moves the test clock; returns once every renewal, retry and delivery due by then was run. */
export async function advance(seconds: number): Promise<Date> {
  const r = await api('POST', '/v1/test_clock/advance', { auth: 'admin', body: { seconds } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return new Date(r.body.data.now);
}

/** Moves the test clock to `when` exactly (whole seconds from now), running what is due on the way. */
export async function advanceTo(when: Date | number): Promise<void> {
  const ms = typeof when === 'number' ? when : when.getTime();
  const seconds = (ms - now().getTime()) / 1000;
  expect(Number.isInteger(seconds) && seconds >= 0, `advance to ${new Date(ms).toISOString()} from ${now().toISOString()}`).toBe(true);
  expect((await advance(seconds)).toISOString()).toBe(new Date(ms).toISOString());
}

/** POST /v1/companies/{company}/plans. */
export async function createPlan(co: Co, body: Record<string, unknown>): Promise<{ id: string; name: string }> {
  const r = await co.call('POST', '/v1/companies/{company}/plans', { body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

/** POST /v1/companies/{company}/accounts for Ann, with whatever else is given; the account's id. */
export async function createAccount(co: Co, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ann', email: 'ann@x.io', ...extra } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data.id as string;
}

/** One event costing `amount` units (credits unless said), as the API answers it (a 402 included). */
export function use(co: Co, account: string, amount: number | string, opts: { state?: 'pending'; gate?: boolean; denomination?: string; type?: string } = {}) {
  return co.call('POST', `/v1/accounts/${account}/events`, {
    body: {
      type: opts.type ?? 'q',
      cost_override_amount: amount,
      cost_override_denomination: opts.denomination ?? 'credits',
      ...(opts.state && { state: opts.state }),
      ...(opts.gate && { gate_on_balance: true }),
    },
  });
}

/** One event costing `amount` units, as `use`, that the API must accept (200); its answer. */
export async function spend(co: Co, account: string, amount: number | string, opts: Parameters<typeof use>[3] = {}) {
  const r = await use(co, account, amount, opts);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r;
}

export type Charge = { id: string; amount: number; status: string; reason: string; processor_payment_intent_id: string | null; created_at: string; [k: string]: unknown };

/** The account's charges, newest first, all of them (GET /v1/accounts/{id}/charges). */
export async function charges(co: Co, account: string): Promise<Charge[]> {
  const r = await co.call('GET', `/v1/accounts/${account}/charges?limit=1000`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

/** GET /v1/accounts/{id}: the account as the API shows it. */
export async function getAccount(co: Co, account: string) {
  const r = await co.call('GET', `/v1/accounts/${account}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

/** Adds `amount` units (credits unless said) to the account's balance, creating it if need be; the balance as answered. */
export async function grant(co: Co, account: string, amount: number | string, denomination = 'credits') {
  const r = await co.call('POST', `/v1/accounts/${account}/balance/${denomination}`, { body: { amount } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

/** One balance of the account (credits unless said), as the API shows it. */
export async function balance(co: Co, account: string, denomination = 'credits') {
  const r = await co.call('GET', `/v1/accounts/${account}/balance/${denomination}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

export type LedgerRow = { type: string; amount: number; denomination: string; charge_id: string | null; created_at: string; starting_balance: number; ending_balance: number; [k: string]: unknown };

/** The account's ledger rows, newest first, all of them (GET /v1/accounts/{id}/transactions). */
export async function ledger(co: Co, account: string): Promise<LedgerRow[]> {
  const r = await co.call('GET', `/v1/accounts/${account}/transactions?limit=1000`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

/** A webhook on `url` (with Basic credentials if given) subscribed to `topics`. */
export async function topicWebhook(co: Co, url: string, topics: string[], creds: { username?: string; password?: string } = {}) {
  const w = await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url, ...creds } });
  expect(w.status, JSON.stringify(w.body)).toBe(200);
  for (const topic of topics) expect((await co.call('POST', `/v1/companies/{company}/webhooks/${w.body.data.id}/subscribe/${topic}`)).status).toBe(200);
  return w.body.data as { id: string; secret: string };
}

/** A webhook's deliveries, newest first, as the API lists them. */
export async function deliveries(co: Co, webhookId: string): Promise<any[]> {
  const r = await co.call('GET', `/v1/companies/{company}/webhooks/${webhookId}/deliveries`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

/** Every balance the API shows equals the sum of its ledger rows, denomination by denomination. */
export async function expectLedgerMatches(db: Db, co: Co, account: string): Promise<void> {
  const sums = Object.fromEntries((await ledgerSums(db, account)).map((s) => [s.denomination, Number(s.total)]));
  const r = await co.call('GET', `/v1/accounts/${account}/balances`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const balances = Object.fromEntries((r.body.data as { denomination: string; amount: number }[]).map((b) => [b.denomination, Number(b.amount)]));
  expect(sums).toEqual(balances);
}

/**
 * Webhook receivers for a test file: each records what it was sent, in order, and answers as
 * told; all are released and closed after every test.
 */
export function useWebhookRecorder(): (...args: Parameters<typeof startReceiver>) => Promise<Receiver> {
  const open: Receiver[] = [];
  afterEach(async () => {
    for (const r of open.splice(0)) {
      r.release();
      await r.close();
    }
  });
  return async (...args) => {
    const r = await startReceiver(...args);
    open.push(r);
    return r;
  };
}
