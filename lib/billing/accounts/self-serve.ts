import { and, eq } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { balances, charges, type StoredPortalTopup } from '../../db/schema';
import { now as clockNow } from '../../clock';
import { cmp } from '../../money';
import { ApiError, invalid, notFound } from '../../errors';
import { findBalance, type Balance } from '../balances/balances';
import { queueThresholdRefill } from '../balances/crossings';
import { isBelowThreshold } from '../refills/refill-decision';
import { depositUnits } from './deposit';
import { inPlainWords } from './collector';
import { usablePortalLink } from './portal';

/** What a receipt shows: one succeeded charge of the link's account. */
export type Receipt = {
  chargeId: string;
  companyName: string;
  accountName: string;
  accountEmail: string;
  paidAt: Date;
  description: string;
  /** USD cents. */
  amount: number;
  currency: string;
  /** The card the charge was sent to; null for a charge of 0 (no card was charged). */
  card: { brand: string; last4: string } | null;
};

/**
 * The receipt of one of the link's account's succeeded charges. Another account's charge, a
 * failed or pending one, or no such charge: 404 (the same answer for each, so ids cannot be probed).
 */
export async function portalReceipt({ db, token, chargeId }: { db: Db; token: string; chargeId: string }): Promise<Receipt> {
  const { account, company } = await usablePortalLink(db, token, clockNow());
  const [charge] = await db
    .select()
    .from(charges)
    .where(and(eq(charges.id, chargeId), eq(charges.accountId, account.id), eq(charges.status, 'succeeded')));
  if (!charge) throw notFound('receipt', 'charge_id');
  // Charges made before cards were kept on them: the card on file, when it is the one charged.
  const pm = account.paymentMethod;
  const card = charge.cardBrand && charge.cardLast4 ? { brand: charge.cardBrand, last4: charge.cardLast4 } : charge.amount > 0 && pm && pm.id === charge.processorPaymentMethodId ? { brand: pm.brand, last4: pm.last4 } : null;
  return {
    chargeId: charge.id,
    companyName: company.name,
    accountName: account.name,
    accountEmail: account.email,
    paidAt: charge.updatedAt ?? charge.createdAt,
    description: charge.description,
    amount: charge.amount,
    currency: charge.currency,
    card,
  };
}

export type TopupRequest = { denomination: string; amount_to_deposit: string; amount_to_charge: number; key: string };

/** The same package, compared exactly (units as decimals). */
function samePackage(a: StoredPortalTopup, b: Pick<TopupRequest, 'denomination' | 'amount_to_deposit' | 'amount_to_charge'>): boolean {
  return a.denomination === b.denomination && cmp(a.amount_to_deposit, b.amount_to_deposit) === 0 && a.amount_to_charge === b.amount_to_charge;
}

/**
 * The customer buys one of the company's top-up packages with the card on file: a deposit, through
 * the deposit's own charge path. `key` is made by the page for each purchase: a double submit or a
 * retry with it reuses the charge (never two payments, units once). A package the company does not
 * offer (any more) is 400 and charges nothing. A decline is 402 in the card holder's words.
 */
export async function buyPortalTopup({ db, token, input }: { db: Db; token: string; input: TopupRequest }): Promise<Balance> {
  const { link, account, company } = await usablePortalLink(db, token, clockNow());
  const offered = company.portalTopups.find((t) => samePackage(t, input));
  if (!offered) throw invalid(`${company.name} does not offer this top-up (any more). Reload the page to see what is offered.`, 'amount_to_deposit');
  try {
    return await depositUnits({
      db,
      company,
      accountId: account.id,
      input: { denomination: offered.denomination, amount: offered.amount_to_deposit, charge: offered.amount_to_charge, reason: `Top-up of ${offered.amount_to_deposit} ${offered.denomination}` },
      idempotencyKey: `portal:${link.id}:${input.key}`,
    });
  } catch (err) {
    throw inPlainWords(err);
  }
}

/**
 * Turns the threshold refill the company set on a balance on or off for the customer. Off keeps
 * the setting and charges nothing until it is turned on; on, with the balance already below its
 * threshold, buys a refill at once (as a crossing would). A balance without a threshold refill is 400.
 */
export async function setPortalRefill({ db, token, denomination, on }: { db: Db; token: string; denomination: string; on: boolean }): Promise<Balance> {
  const at = clockNow();
  const { account, company } = await usablePortalLink(db, token, at);
  const balance = await findBalance({ db, accountId: account.id, denomination, now: at });
  if (!balance || balance.refillThreshold === null || !balance.refillAmount) {
    throw invalid(`${company.name} has set no automatic refill on ${denomination}.`, 'denomination');
  }
  await db.transaction(async (tx) => {
    await tx.update(balances).set({ thresholdRefillOff: !on, updatedAt: at }).where(eq(balances.id, balance.id));
    if (on && isBelowThreshold(balance, balance.refillThreshold)) await queueThresholdRefill(tx, balance.id, at);
  });
  const after = await findBalance({ db, accountId: account.id, denomination, now: at });
  if (!after) throw new ApiError('internal', 'The balance is gone.');
  return after;
}
