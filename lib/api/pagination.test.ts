import { beforeAll, describe, expect, it } from 'vitest';
import { newPayingCompany, useLocalStripe, useTestDatabase, type ApiResult } from '../testing/harness';
import { type PayingCo } from '../testing/scenario';
import { OPERATIONS } from './openapi/operations';

const t = useTestDatabase();
useLocalStripe();

type Page = { ids: string[]; hasMore: boolean; link: string | null };

const N = 5;

describe('every paged list carries has_more and pages through every item exactly once', () => {
  let co: PayingCo;
  /** Paged list path (company placeholder filled in) by documented operation path. */
  const lists = new Map<string, string>();

  beforeAll(async () => {
    co = await newPayingCompany(t);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await co.call(method, path, { body });
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(200);
      return res.body.data;
    };
    // Five of everything: keys (the first one exists already), plans, webhooks of both styles,
    // accounts with a card, and per account a deposit (a charge and a ledger row), an event and a
    // crossing below zero (a delivery to a receiver that never answers, so each one stays).
    for (let i = 0; i < N - 1; i++) await call('POST', '/v1/companies/{company}/api_keys');
    for (let i = 0; i < N; i++) await call('POST', '/v1/companies/{company}/plans', { name: `Plan ${i}`, balances: [{ amount: 1, denomination: 'credits' }] });
    const hook = await call('POST', '/v1/companies/{company}/webhooks', { url: 'http://127.0.0.1:9/hook' });
    await call('POST', `/v1/companies/{company}/webhooks/${hook.id}/subscribe/negative_balance`);
    for (let i = 0; i < N - 1; i++) await call('POST', '/v1/webhooks', { type: 'payment_failed', url: `http://127.0.0.1:9/by-type-${i}` });
    const accounts: string[] = [];
    for (let i = 0; i < N; i++) accounts.push((await call('POST', '/v1/companies/{company}/accounts', { name: `A${i}`, email: `a${i}@x.io`, token: 'tok_visa' })).id);
    const first = accounts[0];
    for (let i = 0; i < N; i++) await call('POST', `/v1/accounts/${first}/deposit`, { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 100 + i });
    for (const topic of ['pause_balance', 'balance_change', 'auto_refill', 'threshold']) await call('POST', `/v1/companies/{company}/webhooks/${hook.id}/subscribe/${topic}`);
    for (const d of ['alpha', 'beta', 'gamma', 'delta']) await call('POST', `/v1/accounts/${accounts[0]}/balance/${d}`);
    for (let i = 0; i < N; i++) await call('POST', `/v1/accounts/${first}/balance/promo/grants`, { amount: 1 + i });
    for (const a of accounts) {
      await call('POST', `/v1/accounts/${a}/balance/credits`);
      await call('POST', `/v1/accounts/${a}/events`, { type: 'spend', cost_override_amount: 10, cost_override_denomination: 'credits' });
    }

    // A delivery with N attempts: re-sent N times to a receiver that is not there.
    const [delivery] = (await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries?limit=1`)).body.data;
    for (let i = 0; i < N; i++) await call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${delivery.id}/retry`);

    lists.set('/v1/companies/{company_id}/accounts', '/v1/companies/{company}/accounts');
    lists.set('/v1/companies/{company_id}/api_keys', '/v1/companies/{company}/api_keys');
    lists.set('/v1/companies/{company_id}/plans', '/v1/companies/{company}/plans');
    lists.set('/v1/companies/{company_id}/webhooks', '/v1/companies/{company}/webhooks');
    lists.set('/v1/webhooks', '/v1/webhooks');
    lists.set('/v1/companies/{company_id}/events', '/v1/companies/{company}/events');
    lists.set('/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries', `/v1/companies/{company}/webhooks/${hook.id}/deliveries`);
    lists.set('/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/attempts', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${delivery.id}/attempts`);
    lists.set('/v1/accounts/{account_id}/transactions', `/v1/accounts/${first}/transactions`);
    lists.set('/v1/accounts/{account_id}/charges', `/v1/accounts/${first}/charges`);
    lists.set('/v1/accounts/{account_id}/balances', `/v1/accounts/${first}/balances`);
    lists.set('/v1/accounts/{account_id}/balance/{denomination}/grants', `/v1/accounts/${first}/balance/promo/grants`);
    lists.set('/v1/companies/{company_id}/webhooks/{webhook_id}/subscriptions', `/v1/companies/{company}/webhooks/${hook.id}/subscriptions`);
  });

  async function page(path: string, query: string): Promise<Page> {
    const res: ApiResult = await co.call('GET', `${path}?${query}`);
    expect(res.status, `${path}?${query}: ${JSON.stringify(res.body)}`).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'has_more']);
    expect(typeof res.body.has_more).toBe('boolean');
    // A subscription is keyed by its topic.
    return { ids: res.body.data.map((x: { id?: string; topic?: string }) => x.id ?? x.topic), hasMore: res.body.has_more, link: res.headers.get('link') };
  }

  it('covers every paged list of the document', () => {
    const paged = OPERATIONS.filter((o) => o.response.list === 'paged').map((o) => o.path);
    expect([...lists.keys()].sort()).toEqual([...paged].sort());
  });

  it('first, middle and last pages say whether more follow, and following starting_after reaches each item once', async () => {
    for (const [documented, path] of lists) {
      const all = await page(path, 'limit=1000');
      expect(all.hasMore, documented).toBe(false);
      expect(all.link, documented).toBeNull();
      expect(all.ids.length, documented).toBeGreaterThanOrEqual(N);
      expect(new Set(all.ids).size, documented).toBe(all.ids.length);

      for (const limit of [1, 2, 3, all.ids.length - 1, all.ids.length]) {
        const seen: string[] = [];
        let after: string | null = null;
        let pages = 0;
        while (true) {
          const p = await page(path, `limit=${limit}${after ? `&starting_after=${after}` : ''}`);
          pages++;
          expect(p.ids.length, `${documented} limit=${limit} page ${pages}`).toBe(p.hasMore ? limit : Math.min(limit, all.ids.length - seen.length));
          seen.push(...p.ids);
          // The Link header stays, pointing at the same next page as has_more and the last id.
          if (p.hasMore) expect(p.link, documented).toMatch(new RegExp(`starting_after=${p.ids[p.ids.length - 1]}.*rel="next"`));
          else expect(p.link, documented).toBeNull();
          if (!p.hasMore) break;
          after = p.ids[p.ids.length - 1];
          expect(pages, `${documented} limit=${limit}: too many pages`).toBeLessThanOrEqual(all.ids.length);
        }
        // Newest first, each item exactly once, and the last page is the one that says no more.
        expect(seen, `${documented} limit=${limit}`).toEqual(all.ids);
        expect(pages, `${documented} limit=${limit}`).toBe(Math.ceil(all.ids.length / limit));
      }
    }
  });

  it("lists an account's balances newest first, like every list", async () => {
    const account = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Order', email: 'order@x.io' } })).body.data.id;
    for (const d of ['alpha', 'zeta', 'mid']) {
      expect((await co.call('POST', `/v1/accounts/${account}/balance/${d}`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 5));
    }
    const listed = (await co.call('GET', `/v1/accounts/${account}/balances`)).body.data.map((b: { denomination: string }) => b.denomination);
    expect(listed).toEqual(['mid', 'zeta', 'alpha']);
  });

  it('refuses a starting_after that is not in a short list, and a limit out of range, with 400', async () => {
    const account = (await co.call('GET', '/v1/companies/{company}/accounts?limit=1')).body.data[0].id;
    for (const [query, param] of [['starting_after=b_nope', 'starting_after'], ['limit=0', 'limit'], ['limit=1001', 'limit'], ['limit=abc', 'limit']]) {
      for (const path of [`/v1/accounts/${account}/balances`, '/v1/companies']) {
        const res = await co.call('GET', `${path}?${query}`);
        expect(res.status, `${path}?${query}`).toBe(400);
        expect(res.body.error.param, `${path}?${query}`).toBe(param);
      }
    }
  });

  it('lists that are never paged answer has_more: false', async () => {
    const [event] = (await co.call('GET', '/v1/companies/{company}/events?limit=1&state=complete')).body.data;
    const unpaged = new Map([
      ['/v1/companies', '/v1/companies'],
      ['/v1/accounts/{account_id}/usage', `/v1/accounts/${event.account_id}/usage`],
      ['/v1/companies/{company_id}/usage', '/v1/companies/{company}/usage'],
      ['/v1/accounts/{account_id}/spend_limits', `/v1/accounts/${event.account_id}/spend_limits`],
    ]);
    const limits = await co.call('PUT', `/v1/accounts/${event.account_id}/spend_limits`, { body: [{ denomination: 'credits', period: 'month', limit: 1000000, action: 'notify' }] });
    expect(limits.status).toBe(200);
    expect([...unpaged.keys()].sort()).toEqual(OPERATIONS.filter((o) => o.response.list === 'all').map((o) => o.path).sort());
    for (const [documented, path] of unpaged) {
      const res = await co.call('GET', path);
      expect(res.status, documented).toBe(200);
      expect(res.body.data.length, documented).toBeGreaterThan(0);
      expect(res.body.has_more, documented).toBe(false);
      expect(res.headers.get('link'), documented).toBeNull();
    }
  });
});
