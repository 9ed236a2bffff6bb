import { describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { createAccount } from '../../testing/scenario';
import { balances, events, transactions } from '../../db/schema';
import type { Db } from '../../db/client';
import { now } from '../../clock';
import { recordEvents } from './events';

const t = useTestDatabase();

/**
 * A balance nothing has used yet may be deleted (a refused first refill takes back the balance
 * it made). A batch priced while it was there, whose transaction starts after it went, must
 * still write every item's move: the balance made again, its ledger rows, its amount.
 */
describe('a batch whose balance was deleted after pricing', () => {
  for (const gated of [false, true]) {
    it(`writes the moves on a balance made again (${gated ? 'gated' : 'ungated'} items)`, async () => {
      const co = await newCompany(t);
      const account = await createAccount(co);
      expect((await co.call('POST', `/v1/accounts/${account}/balance/credits`)).status).toBe(200);
      const db = t.database.db;
      let deleted = false;
      // The balance goes as the batch's transaction begins: after pricing found it there.
      const racing = new Proxy(db, {
        get(target, prop, receiver) {
          if (prop !== 'transaction') return Reflect.get(target, prop, receiver);
          return async (fn: (tx: Db) => Promise<unknown>) => {
            if (!deleted) {
              deleted = true;
              await target.delete(balances).where(eq(balances.accountId, account));
            }
            return target.transaction(fn as never);
          };
        },
      }) as Db;
      const items = [1.5, 2.25].map((amount) => ({ account_id: account, type: 'x', cost_override: { amount: String(amount), denomination: 'credits' }, ...(gated && { gate_on_balance: false }) }));
      if (gated) items.push({ account_id: account, type: 'x', cost_override: { amount: '1', denomination: 'credits' }, gate_on_balance: true });
      const recorded = await recordEvents({ db: racing, companyId: co.company.id, items, now: now() });
      expect(deleted).toBe(true);
      expect(recorded.map((e) => e.state)).toEqual(gated ? ['complete', 'complete', 'rejected'] : ['complete', 'complete']);
      const [b] = await db.select().from(balances).where(eq(balances.accountId, account));
      expect(b?.amount && Number(b.amount)).toBe(-3.75);
      const rows = await db.select().from(transactions).where(eq(transactions.accountId, account));
      expect(rows.map((r) => Number(r.amount)).sort((x, y) => x - y)).toEqual([-2.25, -1.5]);
      expect(rows.every((r) => r.balanceId === b.id)).toBe(true);
      expect((await db.select().from(events).where(eq(events.accountId, account))).length).toBe(items.length);
    });
  }
});
