import { and, desc, eq, inArray, or } from 'drizzle-orm';
import type { Db } from '../db/client';
import { accounts, collectorLinks, plans } from '../db/schema';
import { listPlans } from '../billing/catalog/plans';
import { keysetPage } from '../db/keyset';

/**
 * Accounts on a plan, or moving to it at their next renewal, newest first, by keyset. Walks the
 * company's accounts by (company_id, id) and stops after limit + 1 matches.
 */
export async function listAccountsOnPlan({ db, companyId, planId, limit, startingAfter }: { db: Db; companyId: string; planId: string; limit: number; startingAfter?: string }) {
  const rows = db
    .select({
      id: accounts.id,
      name: accounts.name,
      email: accounts.email,
      planId: accounts.planId,
      planStatus: accounts.planStatus,
      scheduledPlanId: accounts.scheduledPlanId,
      nextPlanRenewal: accounts.nextPlanRenewal,
    })
    .from(accounts)
    .$dynamic();
  return keysetPage(rows, accounts.id, { limit, starting_after: startingAfter }, eq(accounts.companyId, companyId), or(eq(accounts.planId, planId), eq(accounts.scheduledPlanId, planId)));
}

/** Names for the account ids shown on one page of a list (one indexed lookup). */
export async function accountNames({ db, companyId, ids }: { db: Db; companyId: string; ids: string[] }): Promise<Map<string, string>> {
  const unique = [...new Set(ids)];
  if (!unique.length) return new Map();
  const rows = await db
    .select({ id: accounts.id, name: accounts.name })
    .from(accounts)
    .where(and(eq(accounts.companyId, companyId), inArray(accounts.id, unique)));
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** The newest card-collector link of an account: only its state, the URL itself is never stored. */
export async function latestCollectorLink({ db, accountId }: { db: Db; accountId: string }) {
  const [row] = await db
    .select({ createdAt: collectorLinks.createdAt, expiresAt: collectorLinks.expiresAt, usedAt: collectorLinks.usedAt })
    .from(collectorLinks)
    .where(eq(collectorLinks.accountId, accountId))
    .orderBy(desc(collectorLinks.id))
    .limit(1);
  return row ?? null;
}

/** How many plans a plan picker lists, newest first. */
export const PLAN_CHOICES = 1000;

/**
 * The plans a picker offers: the newest PLAN_CHOICES, and the plans in `include` (an account's
 * current and scheduled plans) however old, so a page can always name them.
 */
export async function planChoices({ db, companyId, include = [], limit = PLAN_CHOICES }: { db: Db; companyId: string; include?: (string | null | undefined)[]; limit?: number }) {
  const { items } = await listPlans({ db, companyId, page: { limit } });
  const listed = new Set(items.map((p) => p.id));
  const missing = [...new Set(include.filter((id): id is string => Boolean(id) && !listed.has(id!)))];
  const older = missing.length ? await db.select().from(plans).where(and(eq(plans.companyId, companyId), inArray(plans.id, missing))) : [];
  return [...items, ...older];
}
