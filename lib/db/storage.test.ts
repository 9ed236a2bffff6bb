import { describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../testing/harness';
import { query, sql } from './client';
import { recordEvents } from '../billing/events/events';

const t = useTestDatabase();

/** The page a balance row's current version lies on. */
async function pageOf(balanceId: string): Promise<number> {
  const [row] = await query<{ page: number }>(t.database.db, sql`select (ctid::text::point)[0]::int as page from balances where id = ${balanceId}`);
  return row.page;
}

describe('how balances are stored', () => {
  it("keeps a moved balance's new version on the page of its old one, however full the table", async () => {
    const co = await newCompany(t);
    const plan = await co.call('POST', '/v1/companies/{company}/plans', {
      body: { name: 'Metered', charge_amount: 0, balances: [{ amount: 1000, denomination: 'credits' }], billing_rules: [{ type: 'call', amount: '1', denomination: 'credits' }] },
    });
    expect(plan.status).toBe(200);
    // Enough balances that the table's first page is as full as it is let to be.
    for (let i = 0; i < 80; i++) {
      const a = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: `A${i}`, email: `a${i}@x.io`, plan_id: plan.body.data.id } });
      expect(a.status).toBe(200);
    }
    const first = await query<{ id: string; account_id: string }>(
      t.database.db,
      sql`select id, account_id from balances where (ctid::text::point)[0] = 0 and company_id = ${co.company.id} order by ctid`,
    );
    const pages = await query<{ n: number }>(t.database.db, sql`select count(distinct (ctid::text::point)[0])::int as n from balances`);
    expect(pages[0].n).toBeGreaterThan(1);
    expect(first.length).toBeGreaterThan(0);
    // Half the balances on the first page move, by a batch and then by single events: each new
    // version fits beside the old one (an update that needs no new index entry). Without the
    // free half, the page is full and the first move already leaves it.
    const moved = first.slice(0, Math.ceil(first.length / 2));
    const items = moved.map((b) => ({ account_id: b.account_id, type: 'call' }));
    await recordEvents({ db: t.database.db, companyId: co.company.id, items, now: new Date() });
    for (const b of moved.slice(0, 3)) {
      const r = await co.call('POST', `/v1/accounts/${b.account_id}/events`, { body: { type: 'call', gate_on_balance: true } });
      expect(r.status).toBe(200);
    }
    const after = await Promise.all(moved.map((b) => pageOf(b.id)));
    expect(after).toEqual(moved.map(() => 0));
    const amounts = await query<{ amount: string }>(t.database.db, sql`select amount::text from balances where id = ${first[0].id}`);
    expect(amounts[0].amount).toBe('998');
  });
});
