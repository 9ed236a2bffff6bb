import { and, eq } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { plans, type BillingPeriod, type OverageChargeMode, type PlanCurrency, type StoredPlanBalance } from '../../db/schema';
import { newId } from '../../ids';
import { now } from '../../clock';
import { notFound } from '../../errors';
import { splitForCard, unitsOut } from '../../money';
import { computePlanCharge } from './periods';
import { keysetPage, type PageQuery } from '../../db/keyset';
import type { BillingRule, Component } from '../events/rate-card';

export type Plan = typeof plans.$inferSelect;
/** A new plan, as the API's body parses into it (amounts are exact decimal strings). */
export type PlanInput = {
  name: string;
  charge_amount: number;
  charge_denomination: PlanCurrency;
  billing_period: BillingPeriod;
  overage_charge_mode: OverageChargeMode;
  threshold_alert_percentage?: string | null;
  balances: { amount: string; denomination: string; overage_charge_amount?: number; overage_charge_denomination?: PlanCurrency; variable_unit_price?: string }[];
  billing_rules: BillingRule[];
  flags: Record<string, boolean>;
  metadata?: Record<string, unknown>;
};
export type PlanBalance = StoredPlanBalance;

export function planBalances(p: Plan): PlanBalance[] {
  return p.balances as PlanBalance[];
}

/** The account's period charge for this plan with its chosen amounts. */
export function periodChargeFor(plan: Plan, chosen: Record<string, string> | null | undefined): number {
  return computePlanCharge({ chargeAmount: plan.chargeAmount, balances: planBalances(plan) }, chosen);
}

/** What starting the plan charges a card now: its period charge, or 0 below the smallest card payment (then carried to the first renewal). */
export function startChargeFor(plan: Plan, chosen: Record<string, string> | null | undefined): number {
  return splitForCard(periodChargeFor(plan, chosen)).charge;
}

export function serializePlan(p: Plan) {
  return {
    id: p.id,
    company_id: p.companyId,
    name: p.name,
    charge_amount: p.chargeAmount,
    charge_denomination: p.chargeDenomination,
    billing_period: p.billingPeriod,
    overage_charge_mode: p.overageChargeMode,
    threshold_alert_percentage: p.thresholdAlertPercentage,
    balances: planBalances(p).map((b) => ({
      amount: unitsOut(b.amount),
      denomination: b.denomination,
      overage_charge_amount: b.overage_charge_amount,
      overage_charge_denomination: b.overage_charge_denomination,
      variable_unit_price: b.variable_unit_price === null ? null : unitsOut(b.variable_unit_price),
    })),
    billing_rules: (p.billingRules as BillingRule[]).map(serializeRule),
    flags: p.flags,
    metadata: p.metadata,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt?.toISOString() ?? null,
  };
}

/** A rule as the API shows it: its numbers as JSON numbers rendered from the exact decimals. */
function serializeRule(r: BillingRule) {
  const n = (v: string) => unitsOut(v);
  const component = (c: Component) =>
    'unit_amount' in c
      ? { quantity: c.quantity, unit_amount: n(c.unit_amount) }
      : 'package' in c
        ? { quantity: c.quantity, package: { size: n(c.package.size), amount: n(c.package.amount) } }
        : {
            quantity: c.quantity,
            tiers_mode: c.tiers_mode,
            tiers: c.tiers.map((t) => ({ up_to: t.up_to === null ? null : n(t.up_to), unit_amount: n(t.unit_amount), ...(t.flat_amount !== undefined && { flat_amount: n(t.flat_amount) }) })),
          };
  return {
    type: r.type,
    denomination: r.denomination,
    amount: n(r.amount ?? '0'),
    ...(r.filters && { filters: r.filters }),
    ...(r.components && { components: r.components.map(component) }),
  };
}

export async function createPlan({ db, companyId, input }: { db: Db; companyId: string; input: PlanInput }) {
  const at = now();
  const [plan] = await db
    .insert(plans)
    .values({
      id: newId('p'),
      companyId,
      name: input.name,
      chargeAmount: input.charge_amount,
      chargeDenomination: input.charge_denomination,
      billingPeriod: input.billing_period,
      overageChargeMode: input.overage_charge_mode,
      thresholdAlertPercentage: input.threshold_alert_percentage ?? null,
      balances: input.balances.map((b) => ({
        amount: b.amount,
        denomination: b.denomination,
        overage_charge_amount: b.overage_charge_amount ?? 0,
        overage_charge_denomination: b.overage_charge_denomination ?? 'USD',
        variable_unit_price: b.variable_unit_price ?? null,
      })),
      billingRules: input.billing_rules,
      flags: input.flags,
      metadata: input.metadata ?? {},
      createdAt: at,
      updatedAt: at,
    })
    .returning();
  return plan;
}

export async function getPlan({ db, companyId, planId, param = 'plan_id' }: { db: Db; companyId: string; planId: string; param?: string }) {
  const [plan] = await db.select().from(plans).where(and(eq(plans.id, planId), eq(plans.companyId, companyId)));
  if (!plan) throw notFound('plan', param);
  return plan;
}

export async function listPlans({ db, companyId, page }: { db: Db; companyId: string; page: PageQuery }) {
  return keysetPage(db.select().from(plans).$dynamic(), plans.id, page, eq(plans.companyId, companyId));
}
