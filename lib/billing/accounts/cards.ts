import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts } from '../../db/schema';
import { now } from '../../clock';
import { log } from '../../log';
import { retryPastDueRenewal } from '../plans/renewals';
import { ApiError } from '../../errors';
import type { Processor } from '../../processor/port';
import { processorFor } from '../../processor/processors';
import type { Company } from '../companies/companies';
import type { Account, PaymentMethodSummary } from '../../db/schema';

export function requireProcessor(company: Pick<Company, 'processorKeyEnc'>): Processor {
  const processor = processorFor(company);
  if (!processor) {
    throw new ApiError('invalid_request', 'The company has no payment processor key: register one (processor_key) to collect cards.', null);
  }
  return processor;
}

/**
 * POST /accounts/{account_id}/card: creates the processor customer if needed, then attaches.
 * `onSaved` runs in the transaction that records the new card (a notification written there is
 * sent if and only if the card is on file).
 */
export async function attachCard({ db, company, account, token, onSaved }: { db: Db; company: Company; account: Account; token: string; onSaved?: (tx: Db, previous: PaymentMethodSummary | null, account: Account) => Promise<void> }) {
  const processor = requireProcessor(company);
  let customer = account.processorId;
  if (!customer) {
    customer = await processor.createCustomer({ accountId: account.id, name: account.name, email: account.email });
    await db.update(accounts).set({ processorId: customer }).where(eq(accounts.id, account.id));
  }
  const summary = await processor.attachCard({ accountId: account.id, customer, token });
  const [updated] = onSaved
    ? await db.transaction(async (tx) => {
        const [saved] = await tx.update(accounts).set({ paymentMethod: summary }).where(eq(accounts.id, account.id)).returning();
        await onSaved(tx, account.paymentMethod, saved);
        return [saved];
      })
    : await db.update(accounts).set({ paymentMethod: summary }).where(eq(accounts.id, account.id)).returning();
  if (updated.planStatus === 'PAST_DUE') {
    // A new card is the usual answer to a failed renewal: try it now, not at the next retry slot.
    // Its outcome shows on the account and its charges; the card itself is attached either way.
    try {
      await retryPastDueRenewal(db, updated.id, now());
    } catch (err) {
      log.error({ account_id: updated.id, err }, 'renewal retry after a new card failed');
    }
    const [fresh] = await db.select().from(accounts).where(eq(accounts.id, account.id));
    return fresh;
  }
  return updated;
}

export function serializePaymentMethod(account: Pick<Account, 'id' | 'paymentMethod'>) {
  const pm = account.paymentMethod;
  return {
    account_id: account.id,
    payment_method: pm ? { id: pm.id, brand: pm.brand, last4: pm.last4, exp_month: pm.exp_month, exp_year: pm.exp_year } : null,
  };
}
