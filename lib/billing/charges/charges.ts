import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { charges, accounts, type ChargeReason, type ChargeStatus } from '../../db/schema';
import { newId } from '../../ids';
import { ApiError, notFound } from '../../errors';
import { formatCents, splitForCard } from '../../money';
import { log } from '../../log';
import { wallClock } from '../../clock';
import type { PaymentLook, PaymentOutcome, Processor } from '../../processor/port';
import { processorFor } from '../../processor/processors';
import { keysetPage, type PageQuery } from '../../db/keyset';
import {
  chargeById,
  chargeByWorkKey,
  chargeContext,
  claimChargeCheck,
  dueChargeChecks,
  insertCharge,
  markFailed,
  carryCents,
  markPaid,
  markSent,
  releaseWorkKey,
  reusableChargeByWorkKey,
  setIntent,
} from '../../db/sql/charges';
import { enqueueNotifications } from '../webhooks/outbox';
import type { Company } from '../companies/companies';

export { nextChargeCheck } from '../../db/sql/charges';

export type Charge = typeof charges.$inferSelect;

/**
 * What a charge pays for: a JSON value stored with the charge (its `kind` names the handler).
 * This module records, attempts, settles and fails charges; what a payment buys is the caller's,
 * through the handler map it passes.
 */
export type PaidFor = { kind: string };

/**
 * One handler per kind of effect: `paid` applies it exactly once, in the transaction that marks
 * the charge paid; `failed`, if there is one, in the transaction that marks it failed.
 */
export type Handlers<E extends PaidFor> = {
  [K in E['kind']]: {
    paid: (tx: Db, charge: Charge, effect: Extract<E, { kind: K }>, now: Date) => Promise<void>;
    failed?: (tx: Db, charge: Charge, effect: Extract<E, { kind: K }>, now: Date) => Promise<void>;
  };
};

type Handler<E extends PaidFor> = { paid: (tx: Db, charge: Charge, effect: E, now: Date) => Promise<void>; failed?: (tx: Db, charge: Charge, effect: E, now: Date) => Promise<void> };

/** The effects stored with a charge. */
export function effectsOf<E extends PaidFor>(charge: Pick<Charge, 'metadata'>): E[] {
  return ((charge.metadata as { effects?: E[] }).effects ?? []) as E[];
}

function handlerFor<E extends PaidFor>(handlers: Handlers<E>, effect: E): Handler<E> {
  const handler = (handlers as unknown as Record<string, Handler<E> | undefined>)[effect.kind];
  // A charge recorded with an effect no handler knows would be paid for nothing: never settle it so.
  if (!handler) throw new Error(`no handler for a charge's effect of kind ${effect.kind}`);
  return handler;
}

async function applyPaid<E extends PaidFor>(tx: Db, handlers: Handlers<E>, charge: Charge, now: Date): Promise<void> {
  for (const effect of effectsOf<E>(charge)) await handlerFor(handlers, effect).paid(tx, charge, effect, now);
}

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

export async function listCharges({ db, accountId, page }: { db: Db; accountId: string; page: PageQuery }) {
  return keysetPage(db.select().from(charges).$dynamic(), charges.id, page, eq(charges.accountId, accountId));
}

export type ChargeRequest<E extends PaidFor> = {
  db: Db;
  company: Pick<Company, 'id' | 'processorKeyEnc'>;
  account: Pick<typeof accounts.$inferSelect, 'id' | 'processorId' | 'paymentMethod'>;
  amount: number;
  reason: ChargeReason;
  description: string;
  effects: E[];
  /** What each kind of effect does when the charge is paid (or fails). */
  handlers: Handlers<E>;
  now: Date;
  /** Names work that may be retried (a job, a renewal attempt): the retry reuses its charge. */
  workKey?: string;
  /**
   * The Idempotency-Key of the API request the charge is made for. A retry of the request
   * (same key) finds this charge, so it never charges twice: a pending charge is executed
   * again with the same processor idempotency key, a paid one is returned as it is.
   */
  idempotencyKey?: string | null;
  /** What the caller does about a failure this call learns of (see Withdrawal). */
  withdraw?: Withdrawal;
  /**
   * The amount is one the service worked out (not one a company set): below the smallest card
   * payment it is not charged now but carried to the account's next renewal (splitForCard).
   */
  computed?: boolean;
};

/**
 * The caller's own handling of a failure that its call learns of, run in the transaction that
 * marks the charge failed, in place of the payment_failed notification: the caller answers the
 * failure itself, and may take back what it made for the charge (a refused account's creation).
 * A failure learnt later, by the reconciler, is notified as usual.
 */
export type Withdrawal = (tx: Db, charge: Charge, now: Date) => Promise<void>;

export type ChargeOutcome = { charge: Charge; ok: boolean; error?: ApiError };

/**
 * The processor keeps an idempotency key for 24 hours from its first use, by its own (real)
 * clock. A charge's payment is sent under its key only within this much real time of its first
 * send, so a resend always reaches the first one's record and never makes a second payment.
 */
export const KEY_WINDOW_MS = 23 * 3600_000;
/** A send this long ago (real time) can no longer be under way at the processor. */
export const SEND_SETTLED_MS = 3600_000;
/** How far before the first send a look for the payment reaches: the processor's clock may be behind ours. */
const CLOCK_SKEW_MS = 10 * 60_000;
/** How long a retried request may reuse its charge: the life of an Idempotency-Key. */
const REQUEST_REUSE_MS = 24 * 3600_000;

export function requestWorkKey(idempotencyKey: string, reason: ChargeReason): string {
  return `req:${idempotencyKey}:${reason}`;
}

/** The 502 for a charge whose outcome is not known yet; the reconciler settles it. */
export function pendingChargeError(charge: Pick<Charge, 'id'>): ApiError {
  return new ApiError(
    'processor_error',
    `The payment processor did not confirm charge ${charge.id} in time. Its outcome is settled automatically: what it pays for is granted only if it was paid, and a retry with the same Idempotency-Key never charges twice.`,
    null,
    { charge_id: charge.id, charge_pending: true },
  );
}

function failureError(charge: Charge): ApiError {
  const message = charge.failureMessage ?? 'The charge failed.';
  if (charge.failureCode === 'payment_method_required') return new ApiError('payment_method_required', message);
  if (charge.failureCode === 'processor_error') return new ApiError('processor_error', message);
  return new ApiError('card_declined', message);
}

/** What a charge row means to its caller. */
function outcomeOf(charge: Charge): ChargeOutcome {
  if (charge.status === 'succeeded') return { charge, ok: true };
  if (charge.status === 'pending') return { charge, ok: false, error: pendingChargeError(charge) };
  return { charge, ok: false, error: failureError(charge) };
}

/**
 * Charges the account's default card for whole USD cents. Never called inside a transaction:
 * the charge row is written first, the processor is called with an idempotency key derived
 * from it, and only a success applies the effects (grants and the like). An unclear answer
 * (timeout, connection error, 5xx) leaves the charge pending: it is looked up, never assumed
 * failed, and the reconciler settles it. A charge of 0 cents calls no processor: it is recorded
 * as paid with its effects in one transaction.
 */
export async function chargeAccount<E extends PaidFor>(asked: ChargeRequest<E>): Promise<ChargeOutcome> {
  const req = carryBelowMinimum(asked);
  const { db, company, account, now } = req;
  const workKey = req.workKey ?? (req.idempotencyKey ? requestWorkKey(req.idempotencyKey, req.reason) : null);
  // Before any row is written: a company whose processor key cannot be used is not a decline.
  const stripe = req.amount === 0 ? null : processorFor(company);
  if (workKey && !req.workKey) await releaseRequestCharge(db, company.id, account.id, workKey, now);
  const paymentMethod = account.paymentMethod;
  const values = {
    id: newId('ch'),
    companyId: company.id,
    accountId: account.id,
    amount: req.amount,
    reason: req.reason,
    description: req.description,
    status: (req.amount === 0 ? 'succeeded' : 'pending') as ChargeStatus,
    processorPaymentMethodId: req.amount === 0 ? null : (paymentMethod?.id ?? null),
    cardBrand: req.amount === 0 ? null : (paymentMethod?.brand ?? null),
    cardLast4: req.amount === 0 ? null : (paymentMethod?.last4 ?? null),
    metadata: { effects: req.effects },
    workKey,
    createdAt: now,
    updatedAt: now,
  };
  if (req.amount === 0) {
    const free = await recordFreeCharge(db, req.handlers, values, now, req.carried);
    if (free) return { charge: free, ok: true };
  } else {
    // Retried work (a job, a renewal attempt, a request with the same Idempotency-Key) passes the
    // same work key: the charge row, and so the processor's idempotency key, are reused.
    await db.transaction(async (tx) => {
      await lockAccount(tx, account.id);
      await insertCharge(tx, values);
    });
  }
  const charge = workKey ? (await chargeByWorkKey(db, company.id, workKey))! : await chargeById(db, values.id);
  if (charge.accountId !== account.id) {
    // Another run of the same request (its Idempotency-Key taken over from this one, which fell
    // silent) made the charge, for an account of its own: that run pays; this one stops.
    throw new ApiError('conflict', `Another run of this request (the same Idempotency-Key) made its charge ${charge.id} for account ${charge.accountId}; this run charged nothing. Read that account.`, null, { charge_id: charge.id, account_id: charge.accountId });
  }
  return continueCharge(db, req.handlers, stripe, account, charge, now, charge.id === values.id, req.withdraw);
}

/**
 * An amount the service worked out below the smallest card payment is recorded as a 0-cent charge
 * (what it pays for applies at once) and its cents are carried to the account's next renewal,
 * saying so in its description: never waived. Amounts a company sets are refused below it instead.
 */
function carryBelowMinimum<E extends PaidFor>(req: ChargeRequest<E>): ChargeRequest<E> & { carried: number } {
  const { charge, carried } = req.computed ? splitForCard(req.amount) : { charge: req.amount, carried: 0 };
  if (!carried) return { ...req, carried: 0 };
  return { ...req, amount: charge, carried, description: `${req.description} (${formatCents(carried)} carried to the next renewal: below $0.50, the smallest card payment)` };
}

/**
 * A charge is recorded under a share lock of its account: an account taken back meanwhile (its
 * creation refused) is either gone (404) or sees the charge and stays (removeRefusedAccount).
 */
async function lockAccount(tx: Db, accountId: string): Promise<void> {
  const [row] = await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).for('share');
  if (!row) throw notFound('account', 'account_id');
}

/** A 0-cent charge: the row and its effects in one transaction; null when the work key was taken. */
async function recordFreeCharge<E extends PaidFor>(db: Db, handlers: Handlers<E>, values: typeof charges.$inferInsert, now: Date, carried = 0): Promise<Charge | null> {
  return db.transaction(async (tx) => {
    await lockAccount(tx, values.accountId);
    const row = await insertCharge(tx, values);
    if (!row) return null;
    if (carried) await carryCents(tx, values.accountId, carried);
    await applyPaid(tx, handlers, row, now);
    return row;
  });
}

/**
 * A retried request's work key names the charge its first attempt made. That charge is reused
 * while it is pending, or paid within the key's life; otherwise (it failed, so nothing was paid,
 * or the key has expired) the request is new work and the old charge gives up the key.
 */
async function releaseRequestCharge(db: Db, companyId: string, accountId: string, workKey: string, now: Date): Promise<void> {
  await releaseWorkKey(db, companyId, accountId, workKey, new Date(now.getTime() - REQUEST_REUSE_MS));
}

/**
 * The charge an earlier attempt of this API request made (same Idempotency-Key and reason),
 * when it may be reused: pending, or paid within the key's life. Lets a retried request pick
 * up where its first attempt stopped, before checks that the first attempt's effects would fail.
 */
export async function findRequestCharge(db: Db, companyId: string, idempotencyKey: string | null | undefined, reason: ChargeReason, now: Date): Promise<Charge | null> {
  if (!idempotencyKey) return null;
  return reusableChargeByWorkKey(db, companyId, requestWorkKey(idempotencyKey, reason), new Date(now.getTime() - REQUEST_REUSE_MS));
}

/** Carries on with an existing charge: a pending one is executed again under its processor key. */
export async function resumeCharge<E extends PaidFor>(args: {
  db: Db;
  handlers: Handlers<E>;
  company: Pick<Company, 'id' | 'processorKeyEnc'>;
  account: Pick<typeof accounts.$inferSelect, 'processorId'>;
  charge: Charge;
  now: Date;
  withdraw?: Withdrawal;
}): Promise<ChargeOutcome> {
  return continueCharge(args.db, args.handlers, args.charge.status === 'pending' ? processorFor(args.company) : null, args.account, args.charge, args.now, false, args.withdraw);
}

function paymentMethodRequired(hasProcessor: boolean): ApiError {
  return new ApiError(
    'payment_method_required',
    hasProcessor
      ? 'The account has no card on file: attach one with POST /v1/accounts/{account_id}/card or the card collector.'
      : 'The company has no payment processor key, so cards cannot be charged.',
  );
}

/** The 402 a charge of the account would fail with before reaching the processor (no key, customer or card); null when it can be tried. */
export function missingPaymentMethod(company: Pick<Company, 'processorKeyEnc'>, account: Pick<typeof accounts.$inferSelect, 'processorId' | 'paymentMethod'>): ApiError | null {
  const stripe = processorFor(company);
  return stripe && account.processorId && account.paymentMethod?.id ? null : paymentMethodRequired(!!stripe);
}

async function continueCharge<E extends PaidFor>(
  db: Db,
  handlers: Handlers<E>,
  processor: Processor | null,
  account: Pick<typeof accounts.$inferSelect, 'processorId'>,
  charge: Charge,
  now: Date,
  fresh: boolean,
  withdraw?: Withdrawal,
): Promise<ChargeOutcome> {
  if (charge.status !== 'pending') return outcomeOf(charge);
  if (!processor || !account.processorId || !charge.processorPaymentMethodId) {
    // An earlier attempt may have reached the processor: only a charge never tried can fail here.
    if (!fresh) return outcomeOf(charge);
    const error = paymentMethodRequired(!!processor);
    log.info({ charge_id: charge.id, account_id: charge.accountId, company_id: charge.companyId, amount: charge.amount, reason: charge.reason, outcome: 'declined', failure_code: 'payment_method_required' }, 'charge attempt');
    return failCharge(db, handlers, charge, 'payment_method_required', error, null, now, withdraw);
  }
  const attempt = await advanceCharge(db, processor, charge, account.processorId);
  if (!attempt) return outcomeOf(await chargeById(db, charge.id));
  return recordAttempt(db, handlers, charge, attempt, now, withdraw);
}

/** What the processor said about a charge. */
type Attempt =
  | { kind: 'paid'; intentId: string }
  | { kind: 'declined'; code: string; error: ApiError; intentId: string | null }
  /**
   * Definite: nothing was charged (the processor refused the request itself, or the charge was
   * given up). With `sends`: only if no send followed the one refused (see markFailed).
   */
  | { kind: 'refused'; error: ApiError; sends?: number }
  /** Not known yet: no answer, a 5xx, the same key still in flight, a refused key, or a payment still processing. */
  | { kind: 'unknown'; intentId: string | null };

function fromOutcome(o: PaymentOutcome): Attempt {
  switch (o.kind) {
    case 'paid':
      return o;
    case 'declined':
      return { kind: 'declined', code: o.code, error: new ApiError('card_declined', o.message, null, { decline_code: o.code }), intentId: o.intentId };
    case 'refused':
      return { kind: 'refused', error: new ApiError('processor_error', o.message) };
    case 'unknown':
      return { kind: 'unknown', intentId: o.intentId };
  }
}

function isOutcome(look: PaymentLook): look is PaymentOutcome {
  return look.kind !== 'not_found' && look.kind !== 'unanswered';
}

/**
 * Moves a pending charge one step at the processor, by what is known of it (real time, never the
 * service's clock, measures the processor's limits):
 * - its payment's id is known: that payment is read, never created again (a payment still
 *   processing a day later is not made twice);
 * - never sent, or first sent less than KEY_WINDOW_MS ago: the payment is created under the
 *   charge's key, which answers with what an earlier send did (or 409 while it is still under
 *   way), or makes it now; after an unclear answer it is looked for;
 * - first sent longer ago: the key may have expired, so only a look; a payment not found fails
 *   the charge only once its last send is SEND_SETTLED_MS old (no request can still make it).
 * Null when the charge stopped being pending meanwhile.
 */
async function advanceCharge(db: Db, processor: Processor, charge: Charge, customer: string): Promise<Attempt | null> {
  if (charge.processorPaymentIntentId) {
    const look = await processor.retrievePayment(charge.processorPaymentIntentId);
    return isOutcome(look) ? fromOutcome(look) : { kind: 'unknown', intentId: charge.processorPaymentIntentId };
  }
  const wall = wallClock();
  if (!charge.firstSentAt || wall.getTime() - charge.firstSentAt.getTime() < KEY_WINDOW_MS) {
    const sent = await markSent(db, charge.id, wall);
    if (!sent) return null;
    const outcome = await processor.createPayment({
      amount: charge.amount,
      customer,
      paymentMethod: charge.processorPaymentMethodId!,
      description: charge.description,
      metadata: { charge_id: charge.id, account_id: charge.accountId, reason: charge.reason },
      idempotencyKey: `charge-${charge.id}`,
      firstSend: sent.sends === 1,
    });
    // A refused key on the first send: final unless another send of the key has left meanwhile.
    if (outcome.kind === 'refused') return { ...fromOutcome(outcome), sends: sent.sends } as Attempt;
    if (outcome.kind !== 'unknown' || outcome.intentId) return fromOutcome(outcome);
    // Not finding it proves nothing here: the request may still reach the processor.
    const look = await processor.findPayment({ customer, chargeId: charge.id, since: lookFrom(sent.charge) });
    return isOutcome(look) ? fromOutcome(look) : { kind: 'unknown', intentId: null };
  }
  const look = await processor.findPayment({ customer, chargeId: charge.id, since: lookFrom(charge) });
  if (isOutcome(look)) return fromOutcome(look);
  if (look.kind === 'not_found' && wall.getTime() - (charge.lastSentAt ?? charge.firstSentAt).getTime() >= SEND_SETTLED_MS) {
    return { kind: 'refused', error: new ApiError('processor_error', 'The payment processor has no payment for this charge, and no request for it can still be under way: it was given up, and nothing was charged.') };
  }
  return { kind: 'unknown', intentId: null };
}

/** Where a look for a charge's payment starts: a little before its first send. */
function lookFrom(charge: Pick<Charge, 'firstSentAt'>): Date {
  return new Date((charge.firstSentAt?.getTime() ?? 0) - CLOCK_SKEW_MS);
}

async function recordAttempt<E extends PaidFor>(db: Db, handlers: Handlers<E>, charge: Charge, attempt: Attempt, now: Date, withdraw?: Withdrawal): Promise<ChargeOutcome> {
  log.info({ charge_id: charge.id, account_id: charge.accountId, company_id: charge.companyId, amount: charge.amount, reason: charge.reason, outcome: attempt.kind, failure_code: attempt.kind === 'declined' ? attempt.code : attempt.kind === 'refused' ? 'processor_error' : null }, 'charge attempt');
  switch (attempt.kind) {
    case 'paid': {
      const settled = await settleCharge(db, handlers, charge.id, attempt.intentId, now);
      if (settled.status !== 'succeeded') {
        // Paid at the processor but recorded as failed: money moved without its effects.
        log.error({ charge_id: charge.id, account_id: charge.accountId, payment_intent_id: attempt.intentId, status: settled.status }, 'charge paid at the processor but recorded otherwise');
      }
      return outcomeOf(settled);
    }
    case 'declined':
      return failCharge(db, handlers, charge, attempt.code, attempt.error, attempt.intentId, now, withdraw);
    case 'refused':
      return failCharge(db, handlers, charge, 'processor_error', attempt.error, null, now, withdraw, attempt.sends);
    case 'unknown': {
      let row = charge;
      if (attempt.intentId && attempt.intentId !== charge.processorPaymentIntentId) {
        row = (await setIntent(db, charge.id, attempt.intentId)) ?? charge;
      }
      return outcomeOf(row.status === 'pending' ? row : charge);
    }
  }
}

/**
 * Marks a pending charge failed, with a payment_failed notification unless the caller withdraws,
 * its effects' failure handlers, then the caller's withdrawal; a charge that is no longer pending
 * is reported as it is.
 */
async function failCharge<E extends PaidFor>(db: Db, handlers: Handlers<E>, charge: Charge, code: string, error: ApiError, intentId: string | null, now: Date, withdraw?: Withdrawal, sends?: number): Promise<ChargeOutcome> {
  const failed = await db.transaction(async (tx) => {
    const row = await markFailed(tx, charge.id, { code, message: error.message, intentId, sends }, now);
    if (!row) return null;
    if (!withdraw) await enqueueNotifications(tx, charge.companyId, [{ accountId: charge.accountId, denomination: 'USD', topic: 'payment_failed', balance: '0', detail: { charge_id: charge.id, amount: charge.amount, reason: charge.reason, failure_code: code } }], now);
    for (const effect of effectsOf<E>(row)) await handlerFor(handlers, effect).failed?.(tx, row, effect, now);
    if (withdraw) await withdraw(tx, row, now);
    return row;
  });
  if (failed) return { charge: failed, ok: false, error };
  return outcomeOf(await chargeById(db, charge.id));
}

/** Marks a charge paid and applies its effects, once: only the update that flips it from pending does. */
export async function settleCharge<E extends PaidFor>(db: Db, handlers: Handlers<E>, chargeId: string, intentId: string, now: Date): Promise<Charge> {
  return db.transaction(async (tx) => {
    const row = await markPaid(tx, chargeId, intentId, now);
    if (!row) return chargeById(tx, chargeId);
    await applyPaid(tx, handlers, row, now);
    return row;
  });
}

/**
 * Settles charges whose outcome was unknown, one step each (advanceCharge): paid → its effects
 * are applied; declined, or given up once no request for it can still be made → failed; still
 * unknown → looked at again later.
 */
export async function reconcilePendingCharges<E extends PaidFor>(db: Db, now: Date, opts: { handlers: Handlers<E>; stopping?: () => boolean }): Promise<number> {
  const due = await dueChargeChecks(db, now, 20);
  let handled = 0;
  for (const d of due) {
    if (opts.stopping?.()) break;
    const charge = await claimChargeCheck(db, d, now);
    if (!charge) continue;
    handled++;
    try {
      await reconcileCharge(db, opts.handlers, charge, now);
    } catch (err) {
      log.error({ charge_id: charge.id, account_id: charge.accountId, err }, 'reconciling the charge failed; looked at again later');
    }
  }
  return handled;
}

async function reconcileCharge<E extends PaidFor>(db: Db, handlers: Handlers<E>, charge: Charge, now: Date): Promise<void> {
  const row = await chargeContext(db, charge);
  const processor = row ? processorFor(row.company) : null;
  if (!processor || !row?.customer || !charge.processorPaymentMethodId) return;
  const attempt = await advanceCharge(db, processor, charge, row.customer);
  if (attempt) await recordAttempt(db, handlers, charge, attempt, now);
}
