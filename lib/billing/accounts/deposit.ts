import type { Db } from '../../db/client';
import { now as clockNow } from '../../clock';
import { getAccount } from './accounts';
import { findBalance, type Balance } from '../balances/balances';
import { checkGrantRoom, checkGrantTimes, createOrGrantBalance } from '../balances/grants';
import { checkDenomination } from '../balances/denomination';
import type { Company } from '../companies/companies';
import { chargeFor } from '../settlement';

/**
 * Grants units, charging the card first when amount_to_charge is above 0 (units only after
 * success). A retry with the same Idempotency-Key reuses the charge: never two payments.
 */
export async function depositUnits({
  db,
  company,
  accountId,
  input,
  idempotencyKey = null,
}: {
  db: Db;
  company: Company;
  accountId: string;
  input: { denomination: string; amount: string; charge: number; reason?: string; expiresAt?: Date; priority?: number };
  idempotencyKey?: string | null;
}): Promise<Balance> {
  const now = clockNow();
  checkDenomination(input.denomination);
  const account = await getAccount({ db, companyId: company.id, accountId });
  const description = input.reason ?? `Deposit of ${input.amount} ${input.denomination}`;
  // Refused before anything is charged.
  checkGrantTimes({ expiresAt: input.expiresAt }, now);
  if (input.charge === 0) {
    return createOrGrantBalance({ db, companyId: company.id, accountId: account.id, denomination: input.denomination, amount: input.amount, reason: description, expiresAt: input.expiresAt, priority: input.priority, now });
  }
  await checkGrantRoom(db, account.id, input.denomination);
  const outcome = await chargeFor({
    db,
    company,
    account,
    amount: input.charge,
    reason: 'deposit',
    description,
    effects: [{ kind: 'grant', denomination: input.denomination, amount: input.amount, type: 'deposit', description, expires_at: input.expiresAt?.toISOString() ?? null, priority: input.priority }],
    now,
    idempotencyKey,
  });
  if (!outcome.ok) throw outcome.error!;
  return (await findBalance({ db, accountId: account.id, denomination: input.denomination, now }))!;
}
