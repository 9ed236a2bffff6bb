import { and, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts, charges, collectorLinks, companies, plans } from '../../db/schema';
import { sha256 } from '../../crypto';
import { newId, newSecret } from '../../ids';
import { publicUrl } from '../../config';
import { now as clockNow } from '../../clock';
import { ApiError, conflict, notFound } from '../../errors';
import { splitForCard } from '../../money';
import { attachCard } from './cards';
import type { Account, PaymentMethodSummary } from '../../db/schema';
import { enqueueNotifications } from '../webhooks/outbox';
import type { Company } from '../companies/companies';
import { withAccountLease } from './lease';
import { claimSubmission, submissionBusyError, isFailedCardAttempt, isSpent, linkSpentError, recordFailedAttempt } from './link-attempts';
import { activatePlan, pendingPlanError } from '../plans/activate';
import { pendingPlanCharge } from '../plans/renewals';
import { decidePendingPlanStart } from './creation-decision';
import { startChargeFor } from '../plans/plans';
import { setting } from '../../env';
import { TOKEN_REFUSED, plainDecline } from '../../processor/port';


/** A one-time link to the hosted card collector. Only its hash is stored; the URL is shown once. */
export async function createCollectorLink({ db, accountId, now }: { db: Db; accountId: string; now: Date }): Promise<string> {
  const token = newSecret('', 32);
  await db.insert(collectorLinks).values({ id: newId('cl'), accountId, tokenHash: sha256(token), expiresAt: new Date(now.getTime() + setting('COLLECTOR_LINK_TTL_HOURS') * 3600_000), createdAt: now });
  return `${publicUrl()}/collect/${token}`;
}

export type CollectorView = {
  companyName: string;
  publishableKey: string | null;
  accountName: string;
  plan: { id: string; name: string; charge: number; period: string } | null;
  /** The account's last renewal payment failed: saving a card retries it at once. */
  pastDue: boolean;
};

async function loadLink(db: Db, token: string) {
  const [row] = await db
    .select({ link: collectorLinks, account: accounts, company: companies })
    .from(collectorLinks)
    .innerJoin(accounts, eq(accounts.id, collectorLinks.accountId))
    .innerJoin(companies, eq(companies.id, accounts.companyId))
    .where(eq(collectorLinks.tokenHash, sha256(token)));
  return row ?? null;
}

/** What the page shows, or why it cannot be used (the page says which). */
export async function viewCollector({ db, token }: { db: Db; token: string }): Promise<{ view: CollectorView } | { problem: 'unknown' | 'used' | 'expired' | 'spent'; companyName?: string }> {
  const row = await loadLink(db, token);
  if (!row) return { problem: 'unknown' };
  if (row.link.usedAt && !(await reopened(db, row.account))) return { problem: 'used' };
  if (isSpent(row.link)) return { problem: 'spent', companyName: row.company.name };
  if (row.link.expiresAt.getTime() <= clockNow().getTime()) return { problem: 'expired' };
  let plan: CollectorView['plan'] = null;
  if (row.account.planId && row.account.planStatus === 'PENDING_PAYMENT_METHOD') {
    const [p] = await db.select().from(plans).where(eq(plans.id, row.account.planId));
    // What saving a card charges: a price under the card minimum is waived.
    if (p) plan = { id: p.id, name: p.name, charge: startChargeFor(p, row.account.planVariableAmounts as Record<string, string> | null), period: p.billingPeriod };
  }
  return { view: { companyName: row.company.name, publishableKey: row.company.processorPublishableKey, accountName: row.account.name, plan, pastDue: row.account.planStatus === 'PAST_DUE' } };
}

/**
 * A used link serves again while the plan its account waits for still waits, with no charge for
 * it pending: the card saved through it started a charge that was then declined.
 */
async function reopened(db: Db, account: Account): Promise<boolean> {
  return !!account.planId && account.planStatus === 'PENDING_PAYMENT_METHOD' && !(await pendingPlanCharge(db, account.id));
}

/** A past-due renewal retried with a new card: paid, or not tried yet (a decline is a 402); null when none was due. */
export type OverdueRenewal = { status: 'paid' } | { status: 'failed'; message: string } | null;

/**
 * A past-due account kept its status after the new card: the renewal retried with it was declined
 * (a failed card attempt like any other, said in plain words), or could not be tried now (the
 * worker retries it).
 */
async function overdueOutcome(db: Db, accountId: string, at: Date): Promise<OverdueRenewal> {
  const [last] = await db.select().from(charges).where(eq(charges.accountId, accountId)).orderBy(desc(charges.id)).limit(1);
  const tried = last && last.createdAt.getTime() >= at.getTime() && last.status === 'failed';
  if (tried && last.failureCode !== 'processor_error' && last.failureCode !== 'payment_method_required') {
    throw new ApiError('card_declined', `Your new card is saved, but the overdue payment with it was declined. ${plainDecline(last.failureCode)}`, null, {
      decline_code: last.failureCode,
    });
  }
  return { status: 'failed', message: 'It could not be tried just now and is retried automatically.' };
}

/**
 * Makes the card the account's default (a past-due renewal is retried with it, see attachCard)
 * and starts a plan that waits for a card. Shared by the collector and the customer portal: a
 * past-due renewal the new card was declined for is a 402 like a declined card (the card stays
 * saved; the holder may try another).
 */
export async function saveCard({ db, company, account, cardToken, at, quote, page }: { db: Db; company: Company; account: Account; cardToken: string; at: Date; quote?: PlanQuote; page: HostedPage }): Promise<{ account: Account; renewal: OverdueRenewal }> {
  const before = account.planStatus;
  // A page loaded before the company changed the waiting plan: nothing is saved or charged.
  if (quote && account.planId && account.planStatus === 'PENDING_PAYMENT_METHOD') {
    const [plan] = await db.select().from(plans).where(eq(plans.id, account.planId));
    const decision = decidePendingPlanStart({ account, plan: plan ?? null });
    if (decision.kind === 'start' && !matchesQuote(decision, quote)) throw priceChanged(false);
  }
  const attached = await attachCard({ db, company, account, token: cardToken, onSaved: (tx, previous, saved) => notifyCardChanged(tx, saved, previous, page, at) });
  if (attached.planId && attached.planStatus === 'PENDING_PAYMENT_METHOD') {
    // Under the account's plan lease: another link of the same account may be submitted at once.
    await withAccountLease(db, attached.id, at, async (fresh) => {
      const [plan] = fresh.planId && fresh.planStatus === 'PENDING_PAYMENT_METHOD' ? await db.select().from(plans).where(eq(plans.id, fresh.planId)) : [];
      const pending = plan ? await pendingPlanCharge(db, fresh.id) : null;
      const decision = decidePendingPlanStart({ account: fresh, plan: plan ?? null, pendingPlanChargeId: pending?.id ?? null });
      if (decision.kind === 'wait') throw pendingPlanError(fresh, decision.chargeId, 'start');
      if (decision.kind === 'start' && quote && !matchesQuote(decision, quote)) throw priceChanged(true);
      if (decision.kind === 'start') await activatePlan({ db, company, account: fresh, plan: decision.plan, chosen: decision.chosen, charge: decision.charge, reason: 'start' });
    });
  }
  const [fresh] = await db.select().from(accounts).where(eq(accounts.id, attached.id));
  if (before !== 'PAST_DUE') return { account: fresh, renewal: null };
  return { account: fresh, renewal: fresh.planStatus === 'PAST_DUE' ? await overdueOutcome(db, fresh.id, at) : { status: 'paid' } };
}

/** The hosted page a card was saved through, and its link. */
export type HostedPage = { kind: 'collector' | 'portal'; linkId: string };

/**
 * `card_changed`: a card saved through a hosted page, which anyone holding its link can use, so
 * the company hears of every one (a forwarded link could replace a good card with a stolen one,
 * or with one that will decline). Written with the card, in its transaction.
 */
async function notifyCardChanged(db: Db, account: Account, previous: PaymentMethodSummary | null, page: HostedPage, at: Date): Promise<void> {
  const card = (pm: PaymentMethodSummary | null) => pm && { brand: pm.brand, last4: pm.last4, exp_month: pm.exp_month, exp_year: pm.exp_year };
  const detail = { source: page.kind, link_id: page.linkId, payment_method: card(account.paymentMethod), previous_payment_method: card(previous) };
  await enqueueNotifications(db, account.companyId, [{ accountId: account.id, denomination: 'USD', topic: 'card_changed', balance: '0', detail }], at);
}

/** What a hosted page showed a plan start would charge: the plan, and the cents saving a card charges. */
export type PlanQuote = { plan_id: string; charge: number };

function matchesQuote(decision: { plan: { id: string }; charge: number }, quote: PlanQuote): boolean {
  return decision.plan.id === quote.plan_id && splitForCard(decision.charge).charge === quote.charge;
}

/** The plan the page showed is no longer the one a card would start, or costs another amount. */
function priceChanged(saved: boolean): ApiError {
  return conflict(
    saved
      ? 'Your card is saved, but the plan or its price changed since this page was loaded, so nothing was charged. Reload the page to see the current price.'
      : 'The plan or its price changed since this page was loaded, so nothing was saved or charged. Reload the page to see the current price.',
    'quote',
  );
}

/**
 * A plan charge still unknown, said to the card holder on a hosted page: the API's message names
 * the account and charge and advises a retry under an Idempotency-Key, which is for the company.
 */
/**
 * A failure as a hosted page's visitor is told it: in plain words only, never the processor's own
 * text (which can name its ids and is not written for a card holder). Declines already are plain
 * words (plainDecline); a token the processor refused and a request it refused are said so here.
 */
export function inPlainWords<E>(err: E): E | ApiError {
  if (!(err instanceof ApiError)) return err;
  const plain = (message: string) => new ApiError(err.type, message, err.param, err.extra, err.headers);
  if (err.type === 'invalid_request' && err.param === 'token' && err.message.startsWith(TOKEN_REFUSED)) {
    return plain('The card was refused by the payment processor. Check its details, or try another card.');
  }
  if (err.type === 'processor_error') return plain('The payment processor could not complete this. Please try again in a few minutes.');
  return err;
}

export function forCardHolder(err: ApiError): ApiError {
  return new ApiError(err.type, 'Your card is saved. Its payment is still being confirmed; check back in a few minutes.', err.param, err.extra, err.headers);
}

/**
 * The end customer submitted a card: claim the link for a while (one submission at a time, and
 * a process that dies mid-way does not leave it used), attach the card, start the pending plan,
 * and mark the link used. On failure (a plan charge still unknown included) the link is released so they can try another card;
 * after MAX_FAILED_ATTEMPTS declined cards or refused tokens it is spent (410 link_expired).
 */
export async function completeCollector({ db, token, cardToken, quote }: { db: Db; token: string; cardToken: string; quote?: PlanQuote }) {
  const at = clockNow();
  const row = await loadLink(db, token);
  if (!row) throw notFound('card collector link');
  const issuer = row.company.name;
  if (isSpent(row.link)) throw linkSpentError(issuer);
  if (row.link.expiresAt.getTime() <= at.getTime()) throw new ApiError('link_expired', `This link has expired. Ask ${issuer} for a new link.`);
  const again = !!row.link.usedAt && (await reopened(db, row.account));
  if (row.link.usedAt && !again) throw conflict('This link was already used.');
  // A reopened link is claimed only as it was read: another submission that used it since wins.
  if (!(await claimSubmission(db, collectorLinks, row.link.id, at, again ? eq(collectorLinks.usedAt, row.link.usedAt!) : isNull(collectorLinks.usedAt)))) {
    const [current] = await db.select().from(collectorLinks).where(eq(collectorLinks.id, row.link.id));
    if (current && isSpent(current)) throw linkSpentError(issuer);
    if (current?.usedAt) throw conflict('This link was already used.');
    throw submissionBusyError();
  }
  // This link, and with it the account's other unused ones: one forwarded or leaked could otherwise
  // replace the card for the rest of its life. One being submitted right now finishes. If the plan
  // charge this card started is declined, they all serve again (see reopened).
  const used = () =>
    db
      .update(collectorLinks)
      .set({ usedAt: at, busyUntil: sql`case when ${collectorLinks.id} = ${row.link.id} then null else ${collectorLinks.busyUntil} end` })
      .where(
        or(
          eq(collectorLinks.id, row.link.id),
          and(eq(collectorLinks.accountId, row.account.id), isNull(collectorLinks.usedAt), or(isNull(collectorLinks.busyUntil), lt(collectorLinks.busyUntil, at))),
        ),
      );
  let account;
  try {
    ({ account } = await saveCard({ db, company: row.company, account: row.account, cardToken, at, quote, page: { kind: 'collector', linkId: row.link.id } }));
  } catch (err) {
    // The card was saved and only the plan's charge is still unknown: the link has done its job,
    // unless that charge is declined: then the plan still waits for a card, and the link serves
    // again (see reopened).
    if (err instanceof ApiError && err.extra.charge_pending === true) {
      await used();
      throw forCardHolder(err);
    }
    // Any other failure frees it for another card.
    if (isFailedCardAttempt(err)) throw await recordFailedAttempt(db, collectorLinks, row.link.id, inPlainWords(err), issuer, { busyUntil: null });
    await db.update(collectorLinks).set({ busyUntil: null }).where(eq(collectorLinks.id, row.link.id));
    throw inPlainWords(err);
  }
  await used();
  return account;
}
