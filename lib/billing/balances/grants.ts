import type { Db } from '../../db/client';
import { ensureBalances, findBalance, grantUnits, type Balance } from './balances';
import { checkDenomination } from './denomination';

/** Creates the balance (idempotent) and, with an amount, grants the company's units (promotional, never expiring) as one ledger row. */
export async function createOrGrantBalance({
  db,
  companyId,
  accountId,
  denomination,
  amount,
  reason,
  now,
}: {
  db: Db;
  companyId: string;
  accountId: string;
  denomination: string;
  amount?: string;
  reason?: string;
  now: Date;
}): Promise<Balance> {
  checkDenomination(denomination);
  await db.transaction(async (tx) => {
    await ensureBalances(tx, [{ accountId, companyId, denomination }], now);
    if (amount) {
      await grantUnits(tx, { companyId, accountId, denomination, amount, category: 'promotional', source: 'grant', type: 'grant', description: reason ?? 'Units granted' }, now);
    }
  });
  return (await findBalance({ db, accountId, denomination, now }))!;
}
