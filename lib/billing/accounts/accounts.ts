import { and, eq, ilike, inArray, ne, or } from 'drizzle-orm';
import { isUniqueViolation, type Db } from '../../db/client';
import { accounts, balances, charges, collectorLinks, plans, portalLinks, webhookDeliveries } from '../../db/schema';
import { newId } from '../../ids';
import { now } from '../../clock';
import { log } from '../../log';
import { ApiError, conflict, invalid, notFound } from '../../errors';
import { MAX_CHARGE_CENTS, unitsOut } from '../../money';
import { keysetPage } from '../../db/keyset';
import { processorFor } from '../../processor/processors';
import type { Account, PaymentMethodSummary } from '../../db/schema';
import { findRequestCharge, type Charge } from '../charges/charges';
import { resumeChargeFor } from '../settlement';
import { activatePlan, pendingPlanError } from '../plans/activate';
import { periodChargeFor } from '../catalog/plans';
import { decideAccountCreation, type AccountCreationDecision, type AccountCreationFacts } from './creation-decision';
import { createCollectorLink } from './collector';
import type { Company } from '../companies/companies';

export type { Account };

/** A new account, as the API's body parses into it. */
export type AccountInput = {
  name: string;
  email: string;
  metadata?: Record<string, unknown>;
  processor_id?: string;
  plan_id?: string;
  plan_variable_amounts?: Record<string, string>;
  enable_card_collector?: boolean;
  token?: string;
  billing_address_id?: string | null;
  external_id?: string | null;
};

/** What PATCH changes on an account. */
export type AccountPatch = { name?: string; email?: string; metadata?: Record<string, unknown>; billing_address_id?: string | null; external_id?: string | null };

/** Chosen amounts as the API writes units: JSON numbers rendered from the exact decimals. */
function chosenOut(amounts: unknown): Record<string, ReturnType<typeof unitsOut>> | null {
  if (!amounts || typeof amounts !== 'object') return null;
  return Object.fromEntries(Object.entries(amounts as Record<string, string>).map(([d, v]) => [d, unitsOut(v)]));
}

export function serializeAccount(a: Account, extra: Record<string, unknown> = {}) {
  return {
    id: a.id,
    name: a.name,
    email: a.email,
    external_id: a.externalId,
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
    plan_variable_amounts: chosenOut(a.planVariableAmounts),
    scheduled_plan_id: a.scheduledPlanId,
    scheduled_plan_variable_amounts: a.scheduledPlanId ? chosenOut(a.scheduledPlanVariableAmounts) : null,
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
  page: { limit: number; starting_after?: string; email?: string; external_id?: string; search?: string };
}) {
  const term = page.search?.trim();
  return keysetPage(
    db.select().from(accounts).$dynamic(),
    accounts.id,
    page,
    eq(accounts.companyId, companyId),
    page.email ? eq(accounts.email, page.email) : undefined,
    page.external_id ? eq(accounts.externalId, page.external_id) : undefined,
    term
      ? or(
          eq(accounts.id, term),
          ilike(accounts.name, `%${escapeLike(term)}%`),
          ilike(accounts.email, `%${escapeLike(term)}%`),
          ilike(accounts.externalId, `%${escapeLike(term)}%`),
        )
      : undefined,
  );
}

const externalIdTaken = (externalId: string) => conflict(`Another account of this company already has the external_id ${JSON.stringify(externalId)}.`, 'external_id');

/**
 * Refuses an external id another account holds before any processor call is made. The unique
 * index decides between two requests racing for the same id (see insertAccount, updateAccount).
 */
async function checkExternalIdFree({ db, companyId, externalId }: { db: Db; companyId: string; externalId: string }) {
  const [holder] = await db
    .select({ id: accounts.id })
    .from(accounts)
    .where(and(eq(accounts.companyId, companyId), eq(accounts.externalId, externalId)));
  if (holder) throw externalIdTaken(externalId);
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * Validates everything about a new account before any side effect, so a bad plan id or
 * variable amount never leaves a processor customer or a half-made account behind.
 */
export async function validateAccountInput({ db, companyId, input }: { db: Db; companyId: string; input: AccountInput }) {
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
    // Refused here, not by the processor at charge time (a 502 for what is a bad input).
    if (periodChargeFor(plan, input.plan_variable_amounts) > MAX_CHARGE_CENTS) {
      throw invalid(`With these amounts the period charge would exceed ${MAX_CHARGE_CENTS} cents ($999,999.99), the most one card payment can be.`, 'plan_variable_amounts');
    }
  }
  return { plan };
}

/**
 * Creates an account: the facts are read, `decideAccountCreation` decides (see there for the
 * rules), and the decision is carried out. Order matters so that a refusal leaves nothing
 * behind: validate, check payment information, then processor calls (customer, card), then the
 * row; a plan with a charge is charged before its balances are granted, and a failed first
 * charge removes the account again. A retried request (same Idempotency-Key) whose first charge
 * was left pending carries on with the account and charge of its first attempt.
 */
export async function createAccount({ db, company, input, idempotencyKey = null }: { db: Db; company: Company; input: AccountInput; idempotencyKey?: string | null }) {
  const { plan } = await validateAccountInput({ db, companyId: company.id, input });
  const collector = input.enable_card_collector === true;
  const earlier = plan && !collector ? await findEarlierCreation(db, company, idempotencyKey) : null;
  // After the resumption: the account an earlier attempt made holds this id already.
  if (!earlier && input.external_id) await checkExternalIdFree({ db, companyId: company.id, externalId: input.external_id });
  const processor = processorFor(company);
  const named = input.processor_id ?? null;
  const paymentMethod = !earlier && named && processor && !input.token ? await processor.defaultCard(named) : null;
  const decision = decideAccountCreation({ plan, chosen: input.plan_variable_amounts ?? null, collector, hasProcessor: !!processor, token: !!input.token, paymentMethod, earlier });
  if (decision.kind === 'conflict') throw decision.error;
  if (decision.kind === 'resume') return { account: await resumeAccountCreation(db, company, decision), cardCollectorUrl: undefined };
  return openAccount(db, company, input, decision, paymentMethod, idempotencyKey);
}

/** Carries out a decision that makes a new account: processor customer and card, the row, then the plan or the collector. */
async function openAccount(
  db: Db,
  company: Company,
  input: AccountInput,
  decision: Exclude<AccountCreationDecision, { kind: 'conflict' | 'resume' }>,
  defaultCard: PaymentMethodSummary | null,
  idempotencyKey: string | null,
) {
  const processor = processorFor(company);
  const chosen = input.plan_variable_amounts ?? null;
  const id = newId('a');
  let processorId = input.processor_id ?? null;
  let paymentMethod = defaultCard;
  if (!processorId && processor) processorId = await processor.createCustomer({ accountId: id, name: input.name, email: input.email });
  if (input.token && processor && processorId) paymentMethod = await processor.attachCard({ accountId: id, customer: processorId, token: input.token });

  const pending = decision.kind === 'attach_pending';
  const collects = pending || (decision.kind === 'open' && decision.collector);
  const at = now();
  // The row and its collector link together: an account waiting for a card always has its form.
  const { account, cardCollectorUrl } = await db.transaction(async (tx) => {
    const [row] = await tx
      .insert(accounts)
      .values({
        id,
        companyId: company.id,
        name: input.name,
        email: input.email,
        externalId: input.external_id ?? null,
        metadata: input.metadata ?? {},
        processorId,
        paymentMethod,
        billingAddressId: input.billing_address_id ?? null,
        planId: pending ? decision.plan.id : null,
        planStatus: pending ? 'PENDING_PAYMENT_METHOD' : 'NONE',
        planVariableAmounts: pending ? chosen : null,
        flags: [],
        createdAt: at,
        updatedAt: at,
      })
      .returning()
      .catch((err: unknown) => {
        if (isUniqueViolation(err) && input.external_id) throw externalIdTaken(input.external_id);
        throw err;
      });
    return { account: row, cardCollectorUrl: collects ? await createCollectorLink({ db: tx, accountId: id, now: at }) : undefined };
  });

  if (decision.kind === 'start') {
    try {
      await activatePlan({ db, company, account, plan: decision.plan, chosen, charge: decision.charge, reason: 'start', idempotencyKey, withdraw: (tx, charge) => removeRefusedAccount(tx, id, charge) });
    } catch (err) {
      // A charge whose outcome is unknown may still succeed: the account stays, so the
      // reconciler can start its plan (or record the failure) once the processor answers. A
      // declined charge took the account back with its failure; this covers any other refusal.
      if (err instanceof ApiError && err.extra.charge_pending) throw err;
      // Anything else (a statement that failed while a paid charge was being settled) leaves a
      // charge that may be paid: the account stays with it, and the caller retries under its key.
      // When that cannot be read either, the account stays (`unknown`).
      const open = await db
        .select({ id: charges.id })
        .from(charges)
        .where(and(eq(charges.accountId, id), inArray(charges.status, ['pending', 'succeeded'])))
        .limit(1)
        .then(([row]) => row?.id ?? null, () => 'unknown' as const);
      if (open === null) await db.transaction((tx) => removeRefusedAccount(tx, id));
      if (open === null || open === 'unknown' || err instanceof ApiError) throw err;
      log.error({ account_id: id, charge_id: open, err }, 'account creation failed after its plan charge was made; the charge is settled by the reconciler');
      throw pendingPlanError({ id }, open, 'start');
    }
  }
  const [fresh] = await db.select().from(accounts).where(eq(accounts.id, id));
  return { account: fresh, cardCollectorUrl };
}

/**
 * Takes back an account whose creation was refused (its first plan charge failed), with the
 * links minted for it and the notifications still waiting to go out about it: the caller is answered with the failure, and a
 * notification about an account that does not exist would only mislead. A declined charge does
 * this in the transaction that records the decline, so its payment_failed is never queued and no
 * worker can send it in between.
 */
async function removeRefusedAccount(tx: Db, accountId: string, refused: Pick<Charge, 'id'> | null = null) {
  // Locked first: a charge made for the account meanwhile is inserted under a share lock of it
  // (chargeAccount), so it is either seen here or made after the account is gone (and refused).
  const [locked] = await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).for('update');
  if (!locked) return;
  const [used] = await tx.select({ id: balances.id }).from(balances).where(eq(balances.accountId, accountId)).limit(1);
  // A company that moved units on it meanwhile, or made a charge on it that is or may be paid (a
  // deposit whose outcome is not known yet), keeps it, with its ledger, its links and without the
  // plan that was refused (which it never had: the plan starts once paid).
  if (used) return;
  const [paying] = await tx
    .select({ id: charges.id })
    .from(charges)
    .where(and(eq(charges.accountId, accountId), inArray(charges.status, ['pending', 'succeeded']), refused ? ne(charges.id, refused.id) : undefined))
    .limit(1);
  if (paying) return;
  // The links a company may have minted while the charge was pending go with the account.
  await tx.delete(collectorLinks).where(eq(collectorLinks.accountId, accountId));
  await tx.delete(portalLinks).where(eq(portalLinks.accountId, accountId));
  await tx.delete(webhookDeliveries).where(and(eq(webhookDeliveries.accountId, accountId), eq(webhookDeliveries.status, 'pending')));
  await tx.delete(accounts).where(eq(accounts.id, accountId));
}

/** The account and plan charge an earlier attempt of this request made; null when there is none (or its account is gone). */
async function findEarlierCreation(db: Db, company: Company, idempotencyKey: string | null): Promise<AccountCreationFacts['earlier']> {
  const charge = await findRequestCharge(db, company.id, idempotencyKey, 'plan_start', now());
  if (!charge) return null;
  const [account] = await db.select().from(accounts).where(and(eq(accounts.id, charge.accountId), eq(accounts.companyId, company.id)));
  return account ? { account, charge } : null;
}

/** Carries on with an earlier attempt's first charge: its account, once paid; a failed one removes the account. */
async function resumeAccountCreation(db: Db, company: Company, { account, charge }: { account: Account; charge: Charge }): Promise<Account> {
  const outcome = await resumeChargeFor({ db, company, account, charge, now: now(), withdraw: (tx, refused) => removeRefusedAccount(tx, account.id, refused) });
  if (!outcome.ok) {
    // Failed before this retry (a failure it learnt of took the account back already).
    if (outcome.charge.status === 'failed') await db.transaction((tx) => removeRefusedAccount(tx, account.id, outcome.charge));
    throw outcome.charge.status === 'pending' ? pendingPlanError(account, outcome.charge.id, 'start') : outcome.error!;
  }
  const [fresh] = await db.select().from(accounts).where(eq(accounts.id, account.id));
  return fresh;
}

export async function updateAccount({ db, companyId, accountId, input }: { db: Db; companyId: string; accountId: string; input: AccountPatch }) {
  const [account] = await db
    .update(accounts)
    .set({
      ...(input.name !== undefined && { name: input.name }),
      ...(input.email !== undefined && { email: input.email }),
      ...(input.metadata !== undefined && { metadata: input.metadata }),
      ...(input.billing_address_id !== undefined && { billingAddressId: input.billing_address_id }),
      ...(input.external_id !== undefined && { externalId: input.external_id }),
      updatedAt: now(),
    })
    .where(and(eq(accounts.id, accountId), eq(accounts.companyId, companyId)))
    .returning()
    .catch((err: unknown) => {
      if (isUniqueViolation(err) && input.external_id) throw externalIdTaken(input.external_id);
      throw err;
    });
  if (!account) throw notFound('account', 'account_id');
  return account;
}
