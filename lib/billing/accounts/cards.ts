import Stripe from 'stripe';
import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts, type PaymentMethodSummary } from '../../db/schema';
import { sha256 } from '../../crypto';
import { now } from '../../clock';
import { log } from '../../log';
import { retryPastDueRenewal } from '../plans/renewals';
import { ApiError } from '../../errors';
import { createCustomer, processorFailure, processorFor } from '../../processor/stripe';
import type { Company } from '../companies/companies';
import type { Account } from '../../db/schema';

export function requireProcessor(company: Pick<Company, 'processorKeyEnc'>): Stripe {
  const stripe = processorFor(company);
  if (!stripe) {
    throw new ApiError('invalid_request', 'The company has no payment processor key: register one (processor_key) to collect cards.', null);
  }
  return stripe;
}

/**
 * Turns a card token from Stripe's client-side card element (or a pm_ id) into the customer's
 * default payment method. Only calls a restricted key allows: payment_methods create/attach
 * and customers update, each with an idempotency key derived from our ids.
 */
export async function attachCardToCustomer(args: { stripe: Stripe; accountId: string; customer: string; token: string }): Promise<PaymentMethodSummary> {
  const { stripe, accountId, customer, token } = args;
  const ref = sha256(`${accountId}:${token}`).slice(0, 24);
  // Which call a refusal came from tells whose it is: the token's, or the account's customer's.
  let step: 'token' | 'attach' | 'default' = 'token';
  try {
    const pm = token.startsWith('pm_')
      ? await stripe.paymentMethods.retrieve(token)
      : await stripe.paymentMethods.create({ type: 'card', card: { token } }, { idempotencyKey: `pm-create-${ref}` });
    step = 'attach';
    if (pm.customer !== customer) await stripe.paymentMethods.attach(pm.id, { customer }, { idempotencyKey: `pm-attach-${ref}` });
    step = 'default';
    await stripe.customers.update(customer, { invoice_settings: { default_payment_method: pm.id } }, { idempotencyKey: `pm-default-${ref}` });
    const card = pm.card;
    return { id: pm.id, brand: card?.brand ?? 'unknown', last4: card?.last4 ?? '', exp_month: card?.exp_month ?? 0, exp_year: card?.exp_year ?? 0 };
  } catch (err) {
    if (err instanceof Stripe.errors.StripeInvalidRequestError) {
      // At the default step, a refusal naming the payment method is the card's; any other is the customer's.
      const aboutCard = err.param?.startsWith('invoice_settings') ?? false;
      if ((step === 'default' && !aboutCard) || (step === 'attach' && err.param === 'customer')) throw customerRefused();
      throw new ApiError('invalid_request', `The card token was refused by the payment processor: ${err.message}`, 'token');
    }
    throw processorFailure(err);
  }
}

/**
 * The processor refused the account's customer (deleted there, or never there): the company's
 * to correct, not the card's. Says nothing of the processor's ids, as the card holder may read it.
 */
function customerRefused(): ApiError {
  return new ApiError(
    'invalid_request',
    "The payment processor refused this account's customer record (processor_id), so the card was not saved. The company must correct the account's processor customer.",
    'processor_id',
  );
}

/**
 * POST /accounts/{account_id}/card: creates the processor customer if needed, then attaches.
 * `onSaved` runs in the transaction that records the new card (a notification written there is
 * sent if and only if the card is on file).
 */
export async function attachCard({ db, company, account, token, onSaved }: { db: Db; company: Company; account: Account; token: string; onSaved?: (tx: Db, previous: PaymentMethodSummary | null, account: Account) => Promise<void> }) {
  const stripe = requireProcessor(company);
  let customer = account.processorId;
  if (!customer) {
    customer = await createCustomer({ stripe, accountId: account.id, name: account.name, email: account.email });
    await db.update(accounts).set({ processorId: customer }).where(eq(accounts.id, account.id));
  }
  const summary = await attachCardToCustomer({ stripe, accountId: account.id, customer, token });
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
