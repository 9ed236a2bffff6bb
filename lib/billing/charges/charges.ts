import Stripe from 'stripe';
import { and, desc, eq, lt } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { charges, accounts, companies } from '../../db/schema';
import { newId } from '../../ids';
import { ApiError } from '../../errors';
import { processorFailure, processorFor } from '../../processor/stripe';
import { toPage, type ListQuery } from '../../api/pagination';
import { enqueueNotifications } from '../webhooks/outbox';
import type { Company } from '../companies/companies';

export type Charge = typeof charges.$inferSelect;

/** What a successful charge does, applied exactly once in the transaction that marks it paid. */
export type Effect =
  | { kind: 'grant'; denomination: string; amount: string; type: string; description: string }
  | { kind: 'activate_plan'; plan_id: string; chosen: Record<string, string> | null; reason: 'start' | 'upgrade' }
  | { kind: 'renew_plan'; due: string; plan_id: string; chosen?: Record<string, string> | null }
  | { kind: 'refill'; balance_id: string; amount: string; description: string; periodic: boolean; config?: Record<string, unknown> };

export function serializeCharge(c: Charge) {
  return {
    id: c.id,
    account_id: c.accountId,
    amount: c.amount,
    currency: c.currency,
    reason: c.reason,
    description: c.description,
    status: c.status,
    processor_payment_intent_id: c.processorPaymentIntentId,
    failure_code: c.failureCode,
    failure_message: c.failureMessage,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt?.toISOString() ?? null,
  };
}

export async function listCharges({ db, accountId, page }: { db: Db; accountId: string; page: ListQuery }) {
  const rows = await db
    .select()
    .from(charges)
    .where(and(eq(charges.accountId, accountId), page.starting_after ? lt(charges.id, page.starting_after) : undefined))
    .orderBy(desc(charges.id))
    .limit(page.limit + 1);
  return toPage(rows, page.limit);
}

export type ChargeRequest = {
  db: Db;
  company: Pick<Company, 'id' | 'processorKeyEnc'>;
  account: Pick<typeof accounts.$inferSelect, 'id' | 'processorId' | 'paymentMethod'>;
  amount: number;
  reason: string;
  description: string;
  effects: Effect[];
  now: Date;
  /** Names work that may be retried (a job, a renewal attempt): the retry reuses its charge. */
  workKey?: string;
};

export type ChargeOutcome = { charge: Charge; ok: boolean; error?: ApiError };

/**
 * Charges the account's default card for whole USD cents. Never called inside a transaction:
 * the charge row is written first, the processor is called with an idempotency key derived
 * from it, and only a success applies the effects (grants and the like). A timeout is resolved
 * by retrieving the PaymentIntent, never by charging again.
 */
export async function chargeAccount(req: ChargeRequest): Promise<ChargeOutcome> {
  const { db, company, account, now } = req;
  const stripe = processorFor(company);
  const paymentMethod = account.paymentMethod;
  const values = {
    id: newId('ch'),
    companyId: company.id,
    accountId: account.id,
    amount: req.amount,
    reason: req.reason,
    description: req.description,
    status: 'pending',
    processorPaymentMethodId: paymentMethod?.id ?? null,
    metadata: { effects: req.effects },
    workKey: req.workKey ?? null,
    createdAt: now,
    updatedAt: now,
  };
  // Retried work (a job, a renewal attempt) passes the same workKey: the charge row, and so the
  // processor's idempotency key, are reused, and the retry can never charge twice.
  await db.insert(charges).values(values).onConflictDoNothing();
  const [charge] = req.workKey
    ? await db.select().from(charges).where(and(eq(charges.companyId, company.id), eq(charges.workKey, req.workKey)))
    : await db.select().from(charges).where(eq(charges.id, values.id));
  if (charge.status === 'succeeded') return { charge, ok: true };
  if (charge.status === 'failed') return { charge, ok: false, error: new ApiError(charge.failureCode === 'payment_method_required' ? 'payment_method_required' : 'card_declined', charge.failureMessage ?? 'The charge failed.') };
  if (!stripe || !account.processorId || !paymentMethod) {
    const error = new ApiError(
      'payment_method_required',
      stripe
        ? 'The account has no card on file: attach one with POST /v1/accounts/{account_id}/card or the card collector.'
        : 'The company has no payment processor key, so cards cannot be charged.',
    );
    return failCharge(db, charge, 'payment_method_required', error, null, now);
  }
  return executeCharge(db, stripe, charge, account.processorId, now);
}

async function executeCharge(db: Db, stripe: Stripe, charge: Charge, customer: string, now: Date): Promise<ChargeOutcome> {
  let intent: Stripe.PaymentIntent;
  try {
    intent = await stripe.paymentIntents.create(
      {
        amount: charge.amount,
        currency: 'usd',
        customer,
        payment_method: charge.processorPaymentMethodId ?? undefined,
        confirm: true,
        off_session: true,
        description: charge.description,
        metadata: { charge_id: charge.id, account_id: charge.accountId, reason: charge.reason },
      },
      { idempotencyKey: `charge-${charge.id}` },
    );
  } catch (err) {
    if (err instanceof Stripe.errors.StripeCardError) {
      const pi = (err.payment_intent as Stripe.PaymentIntent | undefined)?.id ?? null;
      return failCharge(db, charge, err.decline_code || err.code || 'card_declined', processorFailure(err), pi, now);
    }
    if (err instanceof Stripe.errors.StripeConnectionError || err instanceof Stripe.errors.StripeAPIError || isTimeout(err)) {
      // The request may or may not have reached the processor: look before doing anything else.
      const found = await findIntent(stripe, customer, charge.id);
      if (found === 'unknown') {
        return { charge, ok: false, error: processorFailure(err) };
      }
      if (!found) return failCharge(db, charge, 'processor_error', processorFailure(err), null, now);
      intent = found;
    } else {
      return failCharge(db, charge, 'processor_error', processorFailure(err), null, now);
    }
  }
  if (intent.status !== 'succeeded') {
    return failCharge(db, charge, intent.last_payment_error?.code ?? intent.status, new ApiError('card_declined', 'The card was not charged.'), intent.id, now);
  }
  const settled = await settleCharge(db, charge.id, intent.id, now);
  return { charge: settled, ok: true };
}

function isTimeout(err: unknown): boolean {
  const e = err as { type?: string; code?: string };
  return e?.type === 'StripeConnectionError' || e?.code === 'ETIMEDOUT' || e?.code === 'ECONNRESET';
}

/** Finds the PaymentIntent made for our charge; 'unknown' when the processor cannot be asked. */
async function findIntent(stripe: Stripe, customer: string, chargeId: string): Promise<Stripe.PaymentIntent | null | 'unknown'> {
  try {
    const list = await stripe.paymentIntents.list({ customer, limit: 20 });
    return list.data.find((pi) => pi.metadata?.charge_id === chargeId) ?? null;
  } catch {
    return 'unknown';
  }
}

async function failCharge(db: Db, charge: Charge, code: string, error: ApiError, intentId: string | null, now: Date): Promise<ChargeOutcome> {
  const failed = await db.transaction(async (tx) => {
    const [row] = await tx
      .update(charges)
      .set({ status: 'failed', failureCode: code, failureMessage: error.message, processorPaymentIntentId: intentId, updatedAt: now })
      .where(and(eq(charges.id, charge.id), eq(charges.status, 'pending')))
      .returning();
    if (row) {
      await enqueueNotifications(tx, charge.companyId, [{ accountId: charge.accountId, denomination: 'USD', topic: 'payment_failed', balance: '0', detail: { charge_id: charge.id, amount: charge.amount, reason: charge.reason, failure_code: code } }], now);
    }
    return row ?? charge;
  });
  return { charge: failed, ok: false, error };
}

/** Marks a charge paid and applies its effects, once: only the update that flips it from pending does. */
export async function settleCharge(db: Db, chargeId: string, intentId: string, now: Date): Promise<Charge> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(charges)
      .set({ status: 'succeeded', processorPaymentIntentId: intentId, updatedAt: now })
      .where(and(eq(charges.id, chargeId), eq(charges.status, 'pending')))
      .returning();
    if (!row) {
      const [existing] = await tx.select().from(charges).where(eq(charges.id, chargeId));
      return existing;
    }
    const effects = ((row.metadata as { effects?: Effect[] }).effects ?? []) as Effect[];
    const { applyEffect } = await import('./effects');
    for (const effect of effects) await applyEffect(tx, row, effect, now);
    return row;
  });
}

/** Charges whose outcome is unknown (processor unreachable) are looked up again by the worker. */
export async function reconcilePendingCharges(db: Db, now: Date): Promise<number> {
  const stale = await db
    .select({ charge: charges, company: { id: accounts.companyId }, customer: accounts.processorId })
    .from(charges)
    .innerJoin(accounts, eq(accounts.id, charges.accountId))
    .where(and(eq(charges.status, 'pending'), lt(charges.createdAt, new Date(now.getTime() - 60_000))))
    .limit(20);
  let handled = 0;
  for (const { charge, customer } of stale) {
    const [company] = await db.select().from(companies).where(eq(companies.id, charge.companyId));
    const stripe = company ? processorFor(company) : null;
    if (!stripe || !customer) continue;
    const found = await findIntent(stripe, customer, charge.id);
    if (found === 'unknown') continue;
    handled++;
    if (found && found.status === 'succeeded') await settleCharge(db, charge.id, found.id, now);
    else await failCharge(db, charge, found ? found.status : 'processor_error', new ApiError('processor_error', 'The charge did not complete.'), found ? found.id : null, now);
  }
  return handled;
}
