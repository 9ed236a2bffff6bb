process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';

import { describe, expect, it } from 'vitest';
import { api, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { advance, charges, createAccount, spend, type PayingCo } from '../../testing/scenario';

const t = useTestDatabase();
useLocalStripe();

let addresses = 0;
/** Each call from an address of its own, so the per-address limit of public calls does not mix scenarios up. */
const from = () => ({ 'x-forwarded-for': `198.51.100.${++addresses % 250}` });

async function ok(co: PayingCo, method: string, path: string, body?: unknown) {
  const r = await co.call(method, path, body === undefined ? {} : { body });
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body.data;
}

const PACK = { denomination: 'credits', amount_to_deposit: 1000, amount_to_charge: 1000 };
const keyOf = (n: number) => `purchase-key-000000000${n}`.slice(-24);

async function portalOf(co: PayingCo, token = 'tok_visa') {
  const account = await createAccount(co, { name: 'Ada', email: 'ada@x.io', token });
  const link = (await ok(co, 'POST', `/v1/accounts/${account}/portal_link`)) as { id: string; url: string };
  return { account, base: new URL(link.url).pathname, linkId: link.id };
}

const buy = (base: string, body: Record<string, unknown>) => api('POST', `${base}/topup`, { body, headers: from() });
const credits = async (co: PayingCo, account: string) => (await co.call('GET', `/v1/accounts/${account}/balance/credits`)).body.data?.amount ?? 0;

/** The text a PDF shows: its uncompressed text operators' hex strings, decoded, one line per operator. */
function pdfText(pdf: string): string {
  const lines: string[] = [];
  for (const op of pdf.matchAll(/\[([^\]]*)\]\s*TJ/g)) lines.push([...op[1].matchAll(/<([0-9a-fA-F]*)>/g)].map((m) => Buffer.from(m[1], 'hex').toString('latin1')).join(''));
  return lines.join('\n');
}

describe('PATCH /v1/companies/{company_id}: portal_topups', () => {
  it('stores the packages exactly, answers them on the company, and refuses every bad input with a 400 naming it', async () => {
    const co = await newPayingCompany(t);
    const set = await ok(co, 'PATCH', '/v1/companies/{company}', { portal_topups: [PACK, { denomination: 'tokens', amount_to_deposit: '0.000000000001', amount_to_charge: '99999999' }] });
    expect(set.portal_topups).toEqual([PACK, { denomination: 'tokens', amount_to_deposit: 1e-12, amount_to_charge: 99999999 }]);
    expect((await ok(co, 'GET', '/v1/companies'))[0].portal_topups).toEqual(set.portal_topups);
    const bad: [unknown, string][] = [
      [{}, 'portal_topups'],
      [{ portal_topups: 'x' }, 'portal_topups'],
      [{ portal_topups: [{ ...PACK, amount_to_charge: 49 }] }, 'portal_topups[0].amount_to_charge'],
      [{ portal_topups: [{ ...PACK, amount_to_charge: 0 }] }, 'portal_topups[0].amount_to_charge'],
      [{ portal_topups: [{ ...PACK, amount_to_charge: 100000000 }] }, 'portal_topups[0].amount_to_charge'],
      [{ portal_topups: [{ ...PACK, amount_to_deposit: 0 }] }, 'portal_topups[0].amount_to_deposit'],
      [{ portal_topups: [{ ...PACK, amount_to_deposit: '1e400' }] }, 'portal_topups[0].amount_to_deposit'],
      [{ portal_topups: [{ ...PACK, denomination: 'no spaces' }] }, 'portal_topups[0].denomination'],
      [{ portal_topups: [{ ...PACK, extra: 1 }] }, 'portal_topups[0].extra'],
      [{ portal_topups: [PACK, { ...PACK, amount_to_deposit: '1000.0' }] }, 'portal_topups[1]'],
      [{ portal_topups: Array.from({ length: 11 }, (_, i) => ({ ...PACK, amount_to_deposit: i + 1 })) }, 'portal_topups'],
      [{ name: 'Other' }, ''],
    ];
    for (const [body, param] of bad) {
      const r = await co.call('PATCH', '/v1/companies/{company}', { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.type).toBe('invalid_request');
      if (param) expect(r.body.error.param, JSON.stringify(body)).toBe(param);
    }
    // Nothing of a refused call was stored.
    expect((await ok(co, 'GET', '/v1/companies'))[0].portal_topups).toEqual(set.portal_topups);
    const other = await newPayingCompany(t);
    const foreign = await co.call('PATCH', `/v1/companies/${other.company.id}`, { body: { portal_topups: [] } });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.param).toBe('company_id');
    expect((await ok(other, 'GET', '/v1/companies'))[0].portal_topups).toEqual([]);
  });
});

describe('portal top-ups', () => {
  it('buys an offered package with the card on file once per purchase key, however often it is sent; a new key is a new purchase', async () => {
    const co = await newPayingCompany(t);
    await ok(co, 'PATCH', '/v1/companies/{company}', { portal_topups: [PACK] });
    const { account, base } = await portalOf(co);
    // A double click, and a retry while the first is under way: one payment.
    const same = await Promise.all([1, 2, 3].map(() => buy(base, { ...PACK, key: keyOf(1) })));
    for (const r of same) expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(same[0].body.data.message).toBe('Paid $10.00 with your card: 1,000 credits added.');
    expect(await credits(co, account)).toBe(1000);
    expect((await charges(co, account)).map((c) => [c.reason, c.amount, c.status])).toEqual([['deposit', 1000, 'succeeded']]);
    expect((await buy(base, { ...PACK, key: keyOf(1) })).status).toBe(200);
    expect(await credits(co, account)).toBe(1000);
    expect(await charges(co, account)).toHaveLength(1);
    expect((await buy(base, { ...PACK, key: keyOf(2) })).status).toBe(200);
    expect(await credits(co, account)).toBe(2000);
    expect(await charges(co, account)).toHaveLength(2);
  });

  it('refuses a package the company does not offer, or no longer offers, with a 400 and charges nothing', async () => {
    const co = await newPayingCompany(t);
    await ok(co, 'PATCH', '/v1/companies/{company}', { portal_topups: [PACK] });
    const { account, base } = await portalOf(co);
    for (const body of [{ ...PACK, amount_to_charge: 999 }, { ...PACK, amount_to_deposit: 1001 }, { ...PACK, denomination: 'tokens' }]) {
      const r = await buy(base, { ...body, key: keyOf(3) });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request', param: 'amount_to_deposit' });
      expect(r.body.error.message).toContain('does not offer this top-up');
    }
    for (const body of [{ ...PACK }, { ...PACK, key: 'short' }, { ...PACK, key: keyOf(4), amount_to_charge: 10 }]) expect((await buy(base, body)).status).toBe(400);
    // Taken out of the offer: a page loaded before cannot buy it.
    await ok(co, 'PATCH', '/v1/companies/{company}', { portal_topups: [] });
    expect((await buy(base, { ...PACK, key: keyOf(5) })).status).toBe(400);
    expect(await charges(co, account)).toEqual([]);
    expect(await credits(co, account)).toBe(0);
    // Another account's link is no way around it, and a revoked link buys nothing.
    const { base: revoked, linkId } = await portalOf(co);
    await ok(co, 'PATCH', '/v1/companies/{company}', { portal_topups: [PACK] });
    await ok(co, 'DELETE', `/v1/portal_links/${linkId}`);
    const gone = await buy(revoked, { ...PACK, key: keyOf(6) });
    expect(gone.status).toBe(410);
    expect((await api('POST', '/portal/not-a-token/topup', { body: { ...PACK, key: keyOf(7) }, headers: from() })).status).toBe(404);
  });

  it('says a decline in plain words and adds nothing', async () => {
    const co = await newPayingCompany(t);
    await ok(co, 'PATCH', '/v1/companies/{company}', { portal_topups: [PACK] });
    const { account, base } = await portalOf(co, 'tok_chargeDeclinedInsufficientFunds');
    const r = await buy(base, { ...PACK, key: keyOf(8) });
    expect(r.status).toBe(402);
    expect(r.body.error).toMatchObject({ type: 'card_declined', message: 'The card was declined: it has insufficient funds.' });
    expect(await credits(co, account)).toBe(0);
    expect((await charges(co, account)).map((c) => c.status)).toEqual(['failed']);
  });
});

describe('portal receipts', () => {
  it('gives a PDF of a succeeded charge with the company, date, description, amount, card and charge id; any other charge is 404', async () => {
    const co = await newPayingCompany(t);
    await ok(co, 'PATCH', '/v1/companies/{company}', { portal_topups: [PACK] });
    const { account, base } = await portalOf(co);
    expect((await buy(base, { ...PACK, key: keyOf(9) })).status).toBe(200);
    const [charge] = await charges(co, account);
    const r = await api('GET', `${base}/receipts/${charge.id}/pdf`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/pdf');
    expect(r.headers.get('content-disposition')).toBe(`attachment; filename="receipt-${charge.id}.pdf"`);
    expect(String(r.body).startsWith('%PDF-')).toBe(true);
    const text = pdfText(String(r.body));
    const day = new Date(String(charge.updated_at ?? charge.created_at)).toLocaleDateString('en-US', { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' });
    for (const shown of [co.company.name, 'Receipt', day, 'Top-up of 1000 credits', '$10.00 USD', 'VISA ending in 4242', charge.id, 'Ada <ada@x.io>']) expect(text, shown).toContain(shown);

    // Another account's charge (of the same company), a failed charge, and no charge: 404 alike.
    const bob = await portalOf(co, 'tok_chargeDeclined');
    expect((await buy(bob.base, { ...PACK, key: keyOf(10) })).status).toBe(402);
    const [failed] = await charges(co, bob.account);
    for (const [link, id] of [[bob.base, charge.id], [base, failed.id], [bob.base, failed.id], [base, 'ch_doesnotexist']] as const) {
      const miss = await api('GET', `${link}/receipts/${id}/pdf`);
      expect(miss.status, `${link} ${id}`).toBe(404);
      expect(miss.body.error).toMatchObject({ type: 'not_found', param: 'charge_id' });
    }
  });
});

describe('portal: the threshold refill the company set', () => {
  it('is turned off by the customer (nothing is charged below the threshold) and on again (a refill is bought at once when below)', async () => {
    const co = await newPayingCompany(t);
    const { account, base } = await portalOf(co);
    await ok(co, 'PUT', `/v1/accounts/${account}/balance/credits/auto_refill`, { amount: 100, usd_charge: 1000, threshold: 50 });
    const flip = (on: boolean, denomination = 'credits') => api('POST', `${base}/refill`, { body: { denomination, on }, headers: from() });
    const off = await flip(false);
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(off.body.data).toEqual({ denomination: 'credits', on: false });
    await spend(co, account, 10, { denomination: 'credits' });
    await advance(60);
    expect(await charges(co, account)).toEqual([]);
    expect(await credits(co, account)).toBe(-10);
    // The company's setting is kept.
    expect((await ok(co, 'GET', `/v1/accounts/${account}/balance/credits`)).refill_threshold).toBe(50);
    const on = await flip(true);
    expect(on.body.data).toEqual({ denomination: 'credits', on: true });
    await advance(60);
    expect((await charges(co, account)).map((c) => [c.reason, c.amount, c.status])).toEqual([['refill_threshold', 1000, 'succeeded']]);
    expect(await credits(co, account)).toBe(90);
    // A balance without a threshold refill, and bad input: 400, nothing changed.
    for (const [body, param] of [[{ denomination: 'tokens', on: false }, 'denomination'], [{ denomination: 'credits', on: 'no' }, 'on'], [{ denomination: 'credits' }, 'on']] as const) {
      const r = await api('POST', `${base}/refill`, { body, headers: from() });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.param).toBe(param);
    }
  });
});
