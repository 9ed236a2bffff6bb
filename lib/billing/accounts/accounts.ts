import { and, desc, eq, ilike, lt, or } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts, plans } from '../../db/schema';
import { newId } from '../../ids';
import { now } from '../../clock';
import { invalid, notFound } from '../../errors';
import { toPage } from '../../api/pagination';
import { createCustomer, processorFor } from '../../processor/stripe';
import type { AccountCreate, AccountUpdate } from '../../api/schemas/accounts';
import type { Company } from '../companies/companies';

export type Account = typeof accounts.$inferSelect;

export function serializeAccount(a: Account, extra: Record<string, unknown> = {}) {
  return {
    id: a.id,
    name: a.name,
    email: a.email,
    company_id: a.companyId,
    plan_id: a.planId,
    plan_renewal_cadence: a.planRenewalCadence,
    billing_address_id: a.billingAddressId,
    processor_id: a.processorId,
    created_at: a.createdAt.toISOString(),
    updated_at: a.updatedAt?.toISOString() ?? null,
    metadata: a.metadata,
    last_plan_renewal: a.lastPlanRenewal?.toISOString() ?? null,
    next_plan_renewal: a.nextPlanRenewal?.toISOString() ?? null,
    plan_status: a.planStatus,
    flags: a.flags,
    plan_variable_amounts: a.planVariableAmounts ?? null,
    scheduled_plan_id: a.scheduledPlanId,
    payment_method: a.paymentMethod ?? null,
    ...extra,
  };
}

export async function getAccount({ db, companyId, accountId, param = 'account_id' }: { db: Db; companyId: string; accountId: string; param?: string }) {
  const [account] = await db
    .select()
    .from(accounts)
    .where(and(eq(accounts.id, accountId), eq(accounts.companyId, companyId)));
  if (!account) throw notFound('account', param);
  return account;
}

export async function listAccounts({
  db,
  companyId,
  page,
}: {
  db: Db;
  companyId: string;
  page: { limit: number; starting_after?: string; email?: string; search?: string };
}) {
  const term = page.search?.trim();
  const rows = await db
    .select()
    .from(accounts)
    .where(
      and(
        eq(accounts.companyId, companyId),
        page.starting_after ? lt(accounts.id, page.starting_after) : undefined,
        page.email ? eq(accounts.email, page.email) : undefined,
        term ? or(eq(accounts.id, term), ilike(accounts.name, `%${escapeLike(term)}%`), ilike(accounts.email, `%${escapeLike(term)}%`)) : undefined,
      ),
    )
    .orderBy(desc(accounts.id))
    .limit(page.limit + 1);
  return toPage(rows, page.limit);
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * Validates everything about a new account before any side effect, so a bad plan id or
 * variable amount never leaves a processor customer or a half-made account behind.
 */
export async function validateAccountInput({ db, companyId, input }: { db: Db; companyId: string; input: AccountCreate }) {
  if (!input.plan_id) {
    if (input.plan_variable_amounts) throw invalid('plan_variable_amounts needs a plan_id.', 'plan_variable_amounts');
    return { plan: null };
  }
  const [plan] = await db.select().from(plans).where(and(eq(plans.id, input.plan_id), eq(plans.companyId, companyId)));
  if (!plan) throw notFound('plan', 'plan_id');
  if (input.plan_variable_amounts) {
    const variable = new Set(
      (plan.balances as { denomination: string; variable_unit_price?: string | null }[])
        .filter((b) => b.variable_unit_price !== null && b.variable_unit_price !== undefined)
        .map((b) => b.denomination),
    );
    for (const [name, amount] of Object.entries(input.plan_variable_amounts)) {
      if (!variable.has(name)) throw invalid(`The plan has no variable balance named ${name}.`, `plan_variable_amounts.${name}`);
      if (amount.startsWith('-')) throw invalid('A chosen amount must not be negative.', `plan_variable_amounts.${name}`);
    }
  }
  return { plan };
}

/** Creates an account; without processor_id, a processor customer is created first (no lock held). */
export async function createAccount({ db, company, input }: { db: Db; company: Company; input: AccountCreate }) {
  await validateAccountInput({ db, companyId: company.id, input });
  const id = newId('a');
  let processorId = input.processor_id ?? null;
  if (!processorId) {
    const stripe = processorFor(company);
    if (stripe) processorId = await createCustomer({ stripe, accountId: id, name: input.name, email: input.email });
  }
  const at = now();
  const [account] = await db
    .insert(accounts)
    .values({
      id,
      companyId: company.id,
      name: input.name,
      email: input.email,
      metadata: input.metadata ?? {},
      processorId,
      billingAddressId: input.billing_address_id ?? null,
      flags: [],
      createdAt: at,
      updatedAt: at,
    })
    .returning();
  return account;
}

export async function updateAccount({ db, companyId, accountId, input }: { db: Db; companyId: string; accountId: string; input: AccountUpdate }) {
  const [account] = await db
    .update(accounts)
    .set({
      ...(input.name !== undefined && { name: input.name }),
      ...(input.email !== undefined && { email: input.email }),
      ...(input.metadata !== undefined && { metadata: input.metadata }),
      ...(input.billing_address_id !== undefined && { billingAddressId: input.billing_address_id }),
      updatedAt: now(),
    })
    .where(and(eq(accounts.id, accountId), eq(accounts.companyId, companyId)))
    .returning();
  if (!account) throw notFound('account', 'account_id');
  return account;
}
