import type { Db } from '../../db/client';
import { invalid } from '../../errors';
import { DENOMINATION_RE } from '../../api/schemas/common';
import { ensureBalances, findBalance, moveBalance, type Balance } from './balances';

export function checkDenomination(denomination: string): string {
  if (!DENOMINATION_RE.test(denomination)) {
    throw invalid('A denomination is 1 to 64 letters, digits, and . _ : - (starting with a letter or digit).', 'denomination');
  }
  return denomination;
}

/** Creates the balance (idempotent) and, with an amount, grants units as one ledger row. */
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
      await moveBalance(tx, { accountId, companyId, denomination, amount, type: 'grant', description: reason ?? 'Units granted' }, now);
    }
  });
  return (await findBalance({ db, accountId, denomination, now }))!;
}
