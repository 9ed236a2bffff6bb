import path from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { ConsoleUser } from '../auth';
import { newCompany, useTestDatabase } from '../testing/harness';
import { type Co } from '../testing/scenario';
import { csvRecords, parseCsv } from '../testing/csv';
import { now } from '../clock';
import { csvField, exportEvents, exportLedger, streamCsv } from './exports';

/** The export routes take the signed-in admin from requireUser, swapped here for a session the test sets. */
const session = vi.hoisted(() => ({ user: null as ConsoleUser | null }));
vi.mock('@/lib/auth', async (importOriginal) => {
  const { redirect } = await import('next/navigation');
  return {
    ...(await importOriginal<typeof import('../auth')>()),
    requireUser: async () => {
      if (!session.user) redirect('/console/sign-in');
      return session.user;
    },
  };
});

const t = useTestDatabase();
const APP = path.resolve(__dirname, '../../app/console/(app)');
type Route = { GET: (req: Request, ctx: { params: Promise<{ id: string }> }) => Promise<Response> };

const asAdminOf = (co: Co) => {
  session.user = { id: 'adm_test', email: 'admin@example.com', companyId: co.company.id, companyName: 'Acme', role: 'owner' };
};

describe('CSV fields', () => {
  it('quotes commas, quotes and line breaks (RFC 4180), and keeps free text from running as a formula', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField('cr\rlf')).toBe('"cr\rlf"');
    expect(csvField(null)).toBe('');
    expect(csvField(undefined)).toBe('');
    expect(csvField(false)).toBe('false');
    expect(csvField('-12.5')).toBe('-12.5'); // a number we wrote stays a number
    expect(csvField({ text: '=HYPERLINK("x")' })).toBe('"\'=HYPERLINK(""x"")"');
    expect(csvField({ text: '-1+1' })).toBe("'-1+1");
    expect(csvField({ text: '@SUM(A1)' })).toBe("'@SUM(A1)");
    expect(csvField({ text: 'fine' })).toBe('fine');
    // After what a spreadsheet drops before a formula: spaces, control and invisible characters.
    expect(csvField({ text: ' =1+1' })).toBe("' =1+1");
    expect(csvField({ text: '\u0000=cmd|x' })).toBe("'\u0000=cmd|x");
    expect(csvField({ text: '\u000b@SUM(A1)' })).toBe("'\u000b@SUM(A1)");
    expect(csvField({ text: '\u200b+1' })).toBe("'\u200b+1");
    expect(csvField({ text: '\ufeff-1' })).toBe("'\ufeff-1");
    expect(csvField({ text: '\n=1' })).toBe('"\'\n=1"');
    expect(csvField({ text: '\uff1dSUM(A1)' })).toBe("'\uff1dSUM(A1)");
    expect(csvField({ text: '\tplain' })).toBe("'\tplain");
    expect(csvField({ text: 'a =1' })).toBe('a =1');
    expect(csvField({ text: '  spaced' })).toBe('  spaced');
    expect(csvField({ text: null })).toBe('');
    const tricky = ['a,b', 'say "hi"', 'two\r\nlines', '', 'ünïcode ✓'];
    expect(parseCsv(tricky.map(csvField).join(',') + '\r\n')).toEqual([tricky]);
  });

  it('reads pages only as the reader takes them (a huge export holds one page at a time)', async () => {
    let fetched = 0;
    const body = streamCsv<{ id: string }>({
      header: ['id'],
      nextPage: async (after) => {
        fetched++;
        const start = after ? Number(after) - 1 : 1_000_000;
        return { items: Array.from({ length: 100 }, (_, i) => ({ id: String(start - i) })), hasMore: true };
      },
      toRow: (x) => [x.id],
    });
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (let i = 0; i < 4; i++) text += decoder.decode((await reader.read()).value);
    // The header and three pages were read, plus at most one page buffered ahead: never the
    // ten thousand pages this source would give.
    expect(fetched).toBeLessThanOrEqual(4);
    expect(parseCsv(text).length).toBe(301);
    await reader.cancel();
    const after = fetched;
    await new Promise((r) => setTimeout(r, 20));
    expect(fetched).toBe(after);
  });
});

describe('console exports', () => {
  let co: Co;
  let other: Co;
  let accountId: string;
  let otherAccountId: string;
  let events: typeof import('../../app/console/(app)/events/export/route');
  let ledger: typeof import('../../app/console/(app)/accounts/[id]/ledger/export/route');

  beforeAll(async () => {
    events = await import(path.join(APP, 'events/export/route.ts'));
    ledger = await import(path.join(APP, 'accounts/[id]/ledger/export/route.ts'));
    co = await newCompany(t);
    other = await newCompany(t);
    accountId = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Smith, "Jo"', email: 'jo@example.com' } })).body.data.id;
    otherAccountId = (await other.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Theirs', email: 't@example.com' } })).body.data.id;
    await co.call('POST', `/v1/accounts/${accountId}/balance/credits`, { body: { amount: '0.3', reason: 'Welcome, "friend"\nsecond line' } });
    await co.call('POST', `/v1/accounts/${accountId}/balance/tokens`, { body: { amount: '123456789.123456789012' } });
    const sent = [
      { type: 'render, "hd"', cost_override: { amount: '0.1', denomination: 'credits' }, metadata: { note: 'a,b "c"\nd' } },
      { type: '=cmd|calc', cost_override: { amount: '0.000000000001', denomination: 'credits' } },
      { type: 'query', cost_override: { amount: '0.2', denomination: 'credits' }, state: 'pending', idempotency_key: 'k,1' },
      ...Array.from({ length: 9 }, (_, i) => ({ type: 'bulk', cost_override: { amount: String(i + 1), denomination: 'tokens' } })),
    ];
    const r = await co.call('POST', '/v1/events', { body: sent.map((e) => ({ account_id: accountId, ...e })) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await other.call('POST', '/v1/events', { body: [{ account_id: otherAccountId, type: 'theirs' }] });
  });

  const get = (route: Route, url: string, id = '') => route.GET(new Request(`http://localhost${url}`), { params: Promise.resolve({ id }) });

  it('the events export holds exactly the filtered events of the admin\'s company, as the API lists them, with exact decimals', async () => {
    asAdminOf(co);
    const res = await get(events, '/console/events/export');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="events-\d{4}-\d{2}-\d{2}\.csv"$/);
    expect(res.body).toBeInstanceOf(ReadableStream);
    const rows = csvRecords(await res.text());
    const api = (await co.call('GET', '/v1/companies/{company}/events?limit=1000')).body.data as { id: string; type: string; state: string; cost: { amount: number } | null; metadata: unknown }[];
    expect(rows.map((r) => r.id)).toEqual(api.map((e) => e.id));
    expect(rows.every((r) => r.account_id === accountId && r.account_name === 'Smith, "Jo"')).toBe(true);
    const byType = new Map(rows.map((r) => [r.type, r]));
    expect(byType.get('render, "hd"')).toMatchObject({ cost_amount: '0.1', cost_denomination: 'credits', state: 'complete', priced_by: 'override' });
    expect(JSON.parse(byType.get('render, "hd"')!.metadata)).toEqual({ note: 'a,b "c"\nd' });
    expect(byType.get("'=cmd|calc")).toMatchObject({ cost_amount: '0.000000000001' });
    expect(byType.get('query')).toMatchObject({ state: 'pending', idempotency_key: 'k,1' });
    expect(byType.get('query')!.expires_at).toMatch(/^\d{4}-/);
    expect(rows.some((r) => r.type === 'theirs')).toBe(false);

    const filtered = csvRecords(await (await get(events, `/console/events/export?type=bulk&account_id=${accountId}`)).text());
    expect(filtered.map((r) => r.cost_amount)).toEqual(['9', '8', '7', '6', '5', '4', '3', '2', '1']);
    const pending = csvRecords(await (await get(events, '/console/events/export?state=pending')).text());
    expect(pending.map((r) => r.type)).toEqual(['query']);
    expect(csvRecords(await (await get(events, '/console/events/export?created_lt=2000-01-01T00:00')).text())).toEqual([]);
  });

  it('pages through every row with keyset pagination, whatever the page size', async () => {
    asAdminOf(co);
    const whole = await (await exportEvents({ db: t.database.db, companyId: co.company.id, params: new URLSearchParams(), now: now() })).text();
    const ledgerIds = ((await co.call('GET', `/v1/accounts/${accountId}/transactions?limit=1000`)).body.data as { id: string }[]).map((x) => x.id);
    expect(ledgerIds.length).toBeGreaterThan(10);
    for (const pageSize of [1, 5, 11, 12]) {
      const paged = await (await exportEvents({ db: t.database.db, companyId: co.company.id, params: new URLSearchParams(), now: now(), pageSize })).text();
      expect(paged, `page size ${pageSize}`).toBe(whole);
      const ledgerPaged = await (await exportLedger({ db: t.database.db, companyId: co.company.id, accountId, params: new URLSearchParams(), now: now(), pageSize })).text();
      expect(csvRecords(ledgerPaged).map((r) => r.id)).toEqual(ledgerIds);
    }
  });

  it("the ledger export is the account's ledger as the API lists it, quoted, with exact balances", async () => {
    asAdminOf(co);
    const res = await get(ledger, `/console/accounts/${accountId}/ledger/export`, accountId);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toContain(`ledger-${accountId}-`);
    const text = await res.text();
    const rows = csvRecords(text);
    const api = (await co.call('GET', `/v1/accounts/${accountId}/transactions?limit=1000`)).body.data as { id: string; type: string; event_id: string | null }[];
    expect(rows.map((r) => r.id)).toEqual(api.map((x) => x.id));
    expect(rows.map((r) => r.event_id || null)).toEqual(api.map((x) => x.event_id));
    const grant = rows.find((r) => r.denomination === 'credits' && r.type === 'grant')!;
    expect(grant).toMatchObject({ description: 'Welcome, "friend"\nsecond line', amount: '0.3', starting_balance: '0', ending_balance: '0.3' });
    expect(text).toContain('"Welcome, ""friend""\nsecond line"');
    const tokens = rows.filter((r) => r.denomination === 'tokens');
    expect(tokens[tokens.length - 1]).toMatchObject({ amount: '123456789.123456789012', ending_balance: '123456789.123456789012' });
    expect(tokens[0].ending_balance).toBe('123456789.123456789012'.replace('123456789.', String(123456789 - 45) + '.'));
    const credits = csvRecords(await (await get(ledger, `/console/accounts/${accountId}/ledger/export?denomination=credits`, accountId)).text());
    expect(credits.length).toBeGreaterThan(2);
    expect(credits.every((r) => r.denomination === 'credits')).toBe(true);
    const balance = (await co.call('GET', `/v1/accounts/${accountId}/balance/credits`)).body.data;
    expect(credits[0].ending_balance).toBe(String(balance.amount));
    expect(credits[0].ending_balance).toBe('0.199999999999');
  });

  it("another company's ids answer 404, and only a signed-in admin gets anything", async () => {
    asAdminOf(co);
    const theirLedger = await get(ledger, `/console/accounts/${otherAccountId}/ledger/export`, otherAccountId);
    expect(theirLedger.status).toBe(404);
    expect(await theirLedger.text()).not.toContain('Theirs');
    expect((await get(ledger, '/console/accounts/a_nosuch/ledger/export', 'a_nosuch')).status).toBe(404);
    const theirEvents = await get(events, `/console/events/export?account_id=${otherAccountId}`);
    expect(theirEvents.status).toBe(404);
    expect((await get(events, '/console/events/export?state=sideways')).status).toBe(400);

    asAdminOf(other);
    const theirs = csvRecords(await (await get(events, '/console/events/export')).text());
    expect(theirs.map((r) => r.type)).toEqual(['theirs']);
    expect((await get(ledger, `/console/accounts/${accountId}/ledger/export`, accountId)).status).toBe(404);

    session.user = null;
    await expect(get(events, '/console/events/export')).rejects.toThrow(/NEXT_REDIRECT/);
    await expect(get(ledger, `/console/accounts/${accountId}/ledger/export`, accountId)).rejects.toThrow(/NEXT_REDIRECT/);
  });
});
