import { and, desc, eq, gt, isNull, or } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts, companies, plans, portalLinks } from '../../db/schema';
import { sha256 } from '../../crypto';
import { newId, newSecret } from '../../ids';
import { publicUrl } from '../../env';
import { now as clockNow } from '../../clock';
import { cmp, sub } from '../../money';
import { ApiError, notFound } from '../../errors';
import { listBalances } from '../balances/balances';
import { grantState, listGrants } from '../balances/grants';
import { listCharges } from '../charges/charges';
import { forCardHolder, inPlainWords, saveCard, type OverdueRenewal, type PlanQuote } from './collector';
import { startChargeFor } from '../catalog/plans';
import { PORTAL_LINK_TTL_S } from './portal-limits';
import { claimSubmission, submissionBusyError, isFailedCardAttempt, isSpent, linkSpentError, recordFailedAttempt } from './link-attempts';

/** Charges the page lists, newest first. */
export const PORTAL_CHARGES = 20;
/** Live grants shown per balance. */
export const PORTAL_GRANTS = 50;

export type PortalLink = typeof portalLinks.$inferSelect;

/**
 * A link to the customer portal: one account's balances, plan and charges, and a card form,
 * without sign-in, for `expiresIn` seconds (a day by default). The token carries 256 bits; only
 * its hash is stored; the URL is shown once. The id (`pl_...`) revokes it.
 */
export async function createPortalLink({ db, accountId, now, expiresIn }: { db: Db; accountId: string; now: Date; expiresIn?: number }): Promise<{ id: string; url: string; expiresAt: Date }> {
  const token = newSecret('', 32);
  const id = newId('pl');
  const expiresAt = new Date(now.getTime() + (expiresIn ?? PORTAL_LINK_TTL_S.max) * 1000);
  await db.insert(portalLinks).values({ id, accountId, tokenHash: sha256(token), expiresAt, createdAt: now });
  return { id, url: `${publicUrl()}/portal/${token}`, expiresAt };
}

/** The company's portal link with this id, or 404 (another company's link too). */
async function companyLink(db: Db, companyId: string, linkId: string): Promise<PortalLink> {
  const [row] = await db
    .select({ link: portalLinks })
    .from(portalLinks)
    .innerJoin(accounts, eq(accounts.id, portalLinks.accountId))
    .where(and(eq(portalLinks.id, linkId), eq(accounts.companyId, companyId)));
  if (!row) throw notFound('portal link', 'portal_link_id');
  return row.link;
}

/**
 * Revokes one portal link: its page and card call stop at once (a card submission already under
 * way finishes). Revoking a revoked or expired link changes nothing and answers it as it is.
 */
export async function revokePortalLink({ db, companyId, linkId, now }: { db: Db; companyId: string; linkId: string; now: Date }): Promise<PortalLink> {
  const link = await companyLink(db, companyId, linkId);
  const [revoked] = await db
    .update(portalLinks)
    .set({ revokedAt: now })
    .where(and(eq(portalLinks.id, link.id), isNull(portalLinks.revokedAt)))
    .returning();
  return revoked ?? (await companyLink(db, companyId, linkId));
}

/** Revokes every live portal link of the account (neither expired nor revoked); how many. */
export async function revokeAccountPortalLinks({ db, accountId, now }: { db: Db; accountId: string; now: Date }): Promise<number> {
  const revoked = await db
    .update(portalLinks)
    .set({ revokedAt: now })
    .where(and(eq(portalLinks.accountId, accountId), isNull(portalLinks.revokedAt), gt(portalLinks.expiresAt, now)))
    .returning({ id: portalLinks.id });
  return revoked.length;
}

/** The account's live portal links, newest first (the console lists them to revoke). */
export async function listLivePortalLinks({ db, accountId, now }: { db: Db; accountId: string; now: Date }): Promise<PortalLink[]> {
  return db
    .select()
    .from(portalLinks)
    .where(and(eq(portalLinks.accountId, accountId), isNull(portalLinks.revokedAt), gt(portalLinks.expiresAt, now)))
    .orderBy(desc(portalLinks.id));
}

export function serializePortalLink(link: PortalLink) {
  return {
    id: link.id,
    account_id: link.accountId,
    expires_at: link.expiresAt.toISOString(),
    revoked_at: link.revokedAt?.toISOString() ?? null,
    created_at: link.createdAt.toISOString(),
  };
}

async function loadLink(db: Db, token: string) {
  const [row] = await db
    .select({ link: portalLinks, account: accounts, company: companies })
    .from(portalLinks)
    .innerJoin(accounts, eq(accounts.id, portalLinks.accountId))
    .innerJoin(companies, eq(companies.id, accounts.companyId))
    .where(eq(portalLinks.tokenHash, sha256(token)));
  return row ?? null;
}

export type PortalView = {
  /** The account and its company (the page reads the account's usage with them). */
  ids: { accountId: string; companyId: string };
  companyName: string;
  publishableKey: string | null;
  account: { name: string; email: string };
  balances: { denomination: string; amount: string; pending: string; available: string }[];
  /** Live grants with units left, soonest expiry first (never-expiring last). */
  grants: { id: string; denomination: string; category: string; remaining: string; expiresAt: Date | null }[];
  plan: {
    id: string;
    name: string;
    status: string;
    /** Cents per period. */
    charge: number;
    period: string;
    nextRenewal: Date | null;
    scheduledName: string | null;
  } | null;
  card: { brand: string; last4: string; expMonth: number; expYear: number } | null;
  charges: { id: string; createdAt: Date; description: string; amount: number; status: string; failureMessage: string | null }[];
  /** The top-up packages the company offers. */
  topups: { denomination: string; amountToDeposit: string; amountToCharge: number }[];
  /** The threshold refills the company set on the account's balances, and whether the customer has them on. */
  refills: { denomination: string; threshold: string; amount: string; usd: number; on: boolean }[];
  expiresAt: Date;
};

export type PortalProblem = { problem: 'unknown' | 'expired' | 'spent' | 'revoked'; companyName?: string };

/** What the portal page shows, or why the link cannot be used (the page says which). */
export async function viewPortal({ db, token }: { db: Db; token: string }): Promise<{ view: PortalView } | PortalProblem> {
  const at = clockNow();
  const row = await loadLink(db, token);
  if (!row) return { problem: 'unknown' };
  if (row.link.revokedAt) return { problem: 'revoked', companyName: row.company.name };
  if (row.link.expiresAt.getTime() <= at.getTime()) return { problem: 'expired', companyName: row.company.name };
  if (isSpent(row.link)) return { problem: 'spent', companyName: row.company.name };
  const { account, company } = row;
  const [balanceRows, chargePage, planRows] = await Promise.all([
    listBalances({ db, accountId: account.id, now: at }),
    listCharges({ db, accountId: account.id, page: { limit: PORTAL_CHARGES } }),
    db
      .select()
      .from(plans)
      .where(and(eq(plans.companyId, company.id), or(eq(plans.id, account.planId ?? ''), eq(plans.id, account.scheduledPlanId ?? '')))),
  ]);
  const grantPages = await Promise.all(balanceRows.map((b) => listGrants(db, { accountId: account.id, denomination: b.denomination, status: 'live', page: { limit: PORTAL_GRANTS } }, at)));
  const grants = grantPages
    .flatMap((p) => p.items.map((g) => ({ g, state: grantState(g, at) })))
    .filter(({ state }) => state.status === 'live' && cmp(state.remaining, '0') > 0)
    .map(({ g, state }) => ({ id: g.id, denomination: g.denomination, category: g.category, remaining: state.remaining, expiresAt: g.expiresAt }))
    .sort((x, y) => (x.expiresAt?.getTime() ?? Infinity) - (y.expiresAt?.getTime() ?? Infinity) || (x.denomination < y.denomination ? -1 : 1));
  const current = planRows.find((p) => p.id === account.planId);
  const scheduled = planRows.find((p) => p.id === account.scheduledPlanId);
  const pm = account.paymentMethod;
  return {
    view: {
      ids: { accountId: account.id, companyId: company.id },
      companyName: company.name,
      publishableKey: company.processorPublishableKey,
      account: { name: account.name, email: account.email },
      balances: balanceRows.map((b) => ({ denomination: b.denomination, amount: b.amount, pending: b.pending, available: sub(b.amount, b.pending) })),
      grants,
      plan:
        current && account.planStatus !== 'NONE'
          ? {
              id: current.id,
              name: current.name,
              status: account.planStatus,
              // A plan waiting for a card has no period charge yet: what saving one will charge.
              charge: account.planChargeAmount ?? startChargeFor(current, account.planVariableAmounts as Record<string, string> | null),
              period: current.billingPeriod,
              nextRenewal: account.planStatus === 'CANCELLED' ? null : account.nextPlanRenewal,
              scheduledName: scheduled?.name ?? null,
            }
          : null,
      card: pm ? { brand: pm.brand, last4: pm.last4, expMonth: pm.exp_month, expYear: pm.exp_year } : null,
      charges: chargePage.items.map((c) => ({ id: c.id, createdAt: c.createdAt, description: c.description, amount: c.amount, status: c.status, failureMessage: c.failureMessage })),
      topups: company.portalTopups.map((t) => ({ denomination: t.denomination, amountToDeposit: t.amount_to_deposit, amountToCharge: t.amount_to_charge })),
      refills: balanceRows
        .filter((b) => b.refillThreshold !== null && b.refillAmount)
        .map((b) => ({ denomination: b.denomination, threshold: b.refillThreshold!, amount: b.refillAmount!, usd: b.refillUsdAmount ?? 0, on: !b.thresholdRefillOff })),
      expiresAt: row.link.expiresAt,
    },
  };
}

export type PortalCardOutcome = {
  plan_status: string;
  payment_method: { brand: string; last4: string } | null;
  /** A past-due renewal retried with the new card: paid, or not tried yet (a decline is a 402). */
  renewal: OverdueRenewal;
};

/**
 * The end customer replaced the card through the portal. One submission at a time per link (so
 * failed attempts are counted before the next starts); the card becomes the default, a past-due
 * renewal is retried at once and a plan waiting for a card starts, as with the collector. After
 * MAX_FAILED_ATTEMPTS declined cards or refused tokens the link is spent (410 link_expired).
 */
export async function replacePortalCard({ db, token, cardToken, quote }: { db: Db; token: string; cardToken: string; quote?: PlanQuote }): Promise<PortalCardOutcome> {
  const at = clockNow();
  const row = await loadLink(db, token);
  if (!row) throw notFound('portal link');
  const issuer = row.company.name;
  if (row.link.revokedAt) throw revokedError(issuer);
  if (row.link.expiresAt.getTime() <= at.getTime()) throw new ApiError('link_expired', `This link has expired. Ask ${issuer} for a new link.`);
  if (isSpent(row.link)) throw linkSpentError(issuer);
  // Not if it was revoked meanwhile: a revocation and a claim cannot both pass.
  if (!(await claimSubmission(db, portalLinks, row.link.id, at, isNull(portalLinks.revokedAt)))) {
    const [current] = await db.select().from(portalLinks).where(eq(portalLinks.id, row.link.id));
    if (current?.revokedAt) throw revokedError(issuer);
    if (current && isSpent(current)) throw linkSpentError(issuer);
    throw submissionBusyError();
  }
  let account;
  let renewal: OverdueRenewal = null;
  try {
    ({ account, renewal } = await saveCard({ db, company: row.company, account: row.account, cardToken, at, quote, page: { kind: 'portal', linkId: row.link.id } }));
  } catch (err) {
    // A charge whose outcome is still unknown frees the link like any other answer: a card saved
    // meanwhile charges nothing more (saveCard and the renewals wait for a pending plan charge),
    // and once the charge is settled the form works again.
    if (isFailedCardAttempt(err)) throw await recordFailedAttempt(db, portalLinks, row.link.id, inPlainWords(err), issuer, { busyUntil: null });
    await db.update(portalLinks).set({ busyUntil: null }).where(eq(portalLinks.id, row.link.id));
    throw err instanceof ApiError && err.extra.charge_pending === true ? forCardHolder(err) : inPlainWords(err);
  }
  await db.update(portalLinks).set({ busyUntil: null }).where(eq(portalLinks.id, row.link.id));
  const pm = account.paymentMethod;
  return { plan_status: account.planStatus, payment_method: pm && { brand: pm.brand, last4: pm.last4 }, renewal };
}

/**
 * The portal link of a token that can still be used, with its account and company; otherwise the
 * error its calls answer (404 unknown, 410 link_expired when revoked, expired or spent).
 */
export async function usablePortalLink(db: Db, token: string, at: Date) {
  const row = await loadLink(db, token);
  if (!row) throw notFound('portal link');
  const issuer = row.company.name;
  if (row.link.revokedAt) throw revokedError(issuer);
  if (row.link.expiresAt.getTime() <= at.getTime()) throw new ApiError('link_expired', `This link has expired. Ask ${issuer} for a new link.`);
  if (isSpent(row.link)) throw linkSpentError(issuer);
  return row;
}

function revokedError(issuer: string): ApiError {
  return new ApiError('link_expired', `This link was revoked by ${issuer}. Ask them for a new link.`);
}
