/**
 * Times the console's page loads on a database seeded by seed-console.ts, with the same calls the
 * pages make, and EXPLAINs (ANALYZE, BUFFERS) every distinct statement they send.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:55500/bench npx tsx bench/console-pages.ts > /tmp/console-bench.md
 */
import postgres from 'postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import * as schema from '../lib/db/schema';
import type { Db } from '../lib/db/client';
import { listAccounts, getAccount } from '../lib/billing/accounts/accounts';
import { listBalances, listTransactions } from '../lib/billing/balances/balances';
import { listEvents } from '../lib/billing/events/events';
import { listCharges } from '../lib/billing/charges/charges';
import { listPlans, getPlan } from '../lib/billing/plans/plans';
import { listDeliveries } from '../lib/billing/webhooks/deliveries';
import { listApiKeys } from '../lib/billing/companies/companies';
import { accountTotals, clearDashboardCache, dailyTotals } from '../lib/console/dashboard';
import { accountNames, latestCollectorLink, listAccountsOnPlan } from '../lib/console/queries';
import type { EventListQuery } from '../lib/api/schemas/events';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL to the seeded database.');
const client = postgres(url, { max: 4, onnotice: () => {}, types: { bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } } });
let capture: { sql: string; params: unknown[] }[] | null = null;
const db = drizzle(client, {
  schema,
  logger: {
    logQuery(sql, params) {
      capture?.push({ sql, params });
    },
  },
}) as unknown as Db;

const [{ id: companyId }] = await client`select id from companies where name = 'Bench Company' order by created_at desc limit 1`;
const [busy] = await client`select account_id as id, count(*)::int as n from events where company_id = ${companyId} group by 1 order by 2 desc limit 1`;
const [typical] = await client`select id from accounts where company_id = ${companyId} order by id limit 1 offset 50000`;
const [middle] = await client`select id from events where company_id = ${companyId} order by id limit 1 offset 5000000`;
const plansRows = await client`select id, name from plans where company_id = ${companyId} order by name`;
const usedPlan = plansRows[0].id as string;
const unusedPlan = plansRows[plansRows.length - 1].id as string;
const [webhook] = await client`select id from webhooks where company_id = ${companyId} limit 1`;
const now = new Date();
const iso = (ms: number) => new Date(ms).toISOString();
const DAY = 86_400_000;

type Case = { page: string; what: string; run: () => Promise<unknown>; cold?: () => void };
const cases: Case[] = [
  { page: 'Dashboard', what: 'account counts (bounded + estimate)', run: () => accountTotals({ db, companyId, now }) },
  { page: 'Dashboard', what: '30 days of daily totals, first load (cold cache)', run: () => dailyTotals({ db, companyId, now }), cold: clearDashboardCache },
  { page: 'Dashboard', what: '30 days of daily totals, later loads (today only)', run: () => dailyTotals({ db, companyId, now }) },
  {
    page: 'Dashboard',
    what: 'latest 8 events + account names',
    run: async () => {
      const p = await listEvents({ db, companyId, q: { limit: 8 }, now });
      return accountNames({ db, companyId, ids: p.items.map((e) => e.accountId) });
    },
  },
  { page: 'Accounts', what: 'first page (50)', run: () => listAccounts({ db, companyId, page: { limit: 50 } }) },
  { page: 'Accounts', what: 'page after the 50,000th account', run: () => listAccounts({ db, companyId, page: { limit: 50, starting_after: typical.id } }) },
  { page: 'Accounts', what: 'search "customer4242" (a few matches)', run: () => listAccounts({ db, companyId, page: { limit: 50, search: 'customer4242' } }) },
  { page: 'Accounts', what: 'search with no match (worst case)', run: () => listAccounts({ db, companyId, page: { limit: 50, search: 'nobody-by-this-name' } }) },
  { page: 'Accounts', what: 'search by exact id', run: () => listAccounts({ db, companyId, page: { limit: 50, search: typical.id } }) },
  ...[
    ['busiest account', busy.id],
    ['typical account', typical.id],
  ].map(([label, id]) => ({
    page: 'Account',
    what: `${label}: everything the page reads`,
    run: async () => {
      const account = await getAccount({ db, companyId, accountId: id });
      return Promise.all([
        listBalances({ db, accountId: account.id, now }),
        listTransactions({ db, accountId: account.id, page: { limit: 10 } }),
        listEvents({ db, companyId, q: { limit: 10, account_id: account.id }, now }),
        listCharges({ db, accountId: account.id, page: { limit: 10 } }),
        listPlans({ db, companyId, page: { limit: 200 } }),
        latestCollectorLink({ db, accountId: account.id }),
      ]);
    },
  })),
  { page: 'Plan', what: 'plan used by every account: first 25 accounts', run: async () => listAccountsOnPlan({ db, companyId, planId: (await getPlan({ db, companyId, planId: usedPlan })).id, limit: 25 }) },
  { page: 'Plan', what: 'plan used by no account (walks all 100k accounts)', run: () => listAccountsOnPlan({ db, companyId, planId: unusedPlan, limit: 25 }) },
  ...(
    [
      ['no filter', {}],
      ['state = rejected', { state: 'rejected' }],
      ['state = cancelled (incl. expired holds)', { state: 'cancelled' }],
      ['type = login', { type: 'login' }],
      ['busiest account', { account_id: busy.id }],
      ['one day, 40 days ago', { created_gte: iso(now.getTime() - 40 * DAY), created_lt: iso(now.getTime() - 39 * DAY) }],
      ['the last 10 minutes', { created_gte: iso(now.getTime() - 10 * 60_000) }],
      ['one day 60 days ago, rejected, type upload', { created_gte: iso(now.getTime() - 60 * DAY), created_lt: iso(now.getTime() - 59 * DAY), state: 'rejected', type: 'upload' }],
      ['page after the 5,000,000th event', { starting_after: middle.id }],
    ] as [string, Partial<EventListQuery>][]
  ).map(([what, q]) => ({ page: 'Events', what, run: () => listEvents({ db, companyId, q: { limit: 50, ...q } as EventListQuery, now }) })),
  { page: 'Webhook', what: '20 deliveries with attempts (200k deliveries)', run: () => listDeliveries({ db, companyId, webhookId: webhook.id, page: { limit: 20 } }) },
  { page: 'API keys', what: 'keys', run: () => listApiKeys({ db, companyId, page: { limit: 50 } }) },
];

const ms = async (f: () => Promise<unknown>) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};

console.log(`| page | what | first run | median of 5 after | statements |`);
console.log(`|---|---|---|---|---|`);
const plans: string[] = [];
for (const c of cases) {
  c.cold?.();
  capture = [];
  const first = await ms(c.run);
  const statements = capture;
  capture = null;
  let median = NaN;
  if (!c.cold) {
    const times: number[] = [];
    for (let i = 0; i < 5; i++) times.push(await ms(c.run));
    median = times.sort((a, b) => a - b)[2];
  }
  console.log(`| ${c.page} | ${c.what} | ${first.toFixed(1)} ms | ${Number.isNaN(median) ? '—' : `${median.toFixed(1)} ms`} | ${statements.length} |`);
  if (c.page.startsWith('Events (API') || c.what.includes('later loads')) continue;
  for (const s of statements.filter((x) => !/^explain/i.test(x.sql))) {
    const rows = await client.unsafe(`explain (analyze, buffers) ${s.sql}`, s.params as never[]);
    const lines = rows.map((r) => String(r['QUERY PLAN']));
    plans.push(`-- ${c.page}: ${c.what}\n${s.sql.replace(/\s+/g, ' ').slice(0, 400)}\n${lines.filter((l) => /Scan|Execution Time|Limit|Sort|Aggregate|Index Cond|Rows Removed/.test(l)).slice(0, 8).join('\n')}\n`);
  }
}
console.log('\n```\n' + plans.join('\n') + '```');
await client.end();
