import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { companies } from './companies';
import { BILLING_PERIODS, isOneOf, OVERAGE_CHARGE_MODES, PLAN_CURRENCIES, PLAN_STATUSES, RENEWAL_CADENCES, type PlanCurrency } from './enums';

export type Flag = { name: string; enabled: boolean };
export type PaymentMethodSummary = { id: string; brand: string; last4: string; exp_month: number; exp_year: number };
/** A balance a plan creates, as stored (amounts are exact decimal strings). */
export type StoredPlanBalance = { amount: string; denomination: string; overage_charge_amount: number; overage_charge_denomination: PlanCurrency; variable_unit_price: string | null };
export type StoredBillingRule = { type: string; amount: string; denomination: string };
/** Balance denomination → chosen included amount (an exact decimal string). */
export type ChosenAmounts = Record<string, string>;

export const plans = pgTable(
  'plans',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').notNull().references(() => companies.id),
    name: text('name').notNull(),
    chargeAmount: bigint('charge_amount', { mode: 'number' }).notNull(),
    chargeDenomination: text('charge_denomination', { enum: PLAN_CURRENCIES }).notNull(),
    billingPeriod: text('billing_period', { enum: BILLING_PERIODS }).notNull(),
    overageChargeMode: text('overage_charge_mode', { enum: OVERAGE_CHARGE_MODES }).notNull(),
    thresholdAlertPercentage: text('threshold_alert_percentage'),
    balances: jsonb('balances').$type<StoredPlanBalance[]>().notNull(),
    billingRules: jsonb('billing_rules').$type<StoredBillingRule[]>().notNull(),
    flags: jsonb('flags').$type<Record<string, boolean>>().notNull(),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('plans_company').on(t.companyId, t.id),
    check('plans_charge_nonneg', sql`${t.chargeAmount} >= 0`),
    check('plans_charge_denomination_known', isOneOf(t.chargeDenomination, PLAN_CURRENCIES)),
    check('plans_billing_period_known', isOneOf(t.billingPeriod, BILLING_PERIODS)),
    check('plans_overage_charge_mode_known', isOneOf(t.overageChargeMode, OVERAGE_CHARGE_MODES)),
  ],
);

export const accounts = pgTable(
  'accounts',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').notNull().references(() => companies.id),
    name: text('name').notNull(),
    email: text('email').notNull(),
    // The company's own id for this customer: unique within the company (a lookup key).
    externalId: text('external_id'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
    processorId: text('processor_id'),
    paymentMethod: jsonb('payment_method').$type<PaymentMethodSummary | null>(),
    billingAddressId: text('billing_address_id'),
    planId: text('plan_id').references(() => plans.id),
    planStatus: text('plan_status', { enum: PLAN_STATUSES }).notNull().default('NONE'),
    planRenewalCadence: text('plan_renewal_cadence', { enum: RENEWAL_CADENCES }).notNull().default('MONTHLY'),
    planVariableAmounts: jsonb('plan_variable_amounts').$type<ChosenAmounts | null>(),
    planChargeAmount: bigint('plan_charge_amount', { mode: 'number' }),
    flags: jsonb('flags').$type<Flag[]>().notNull(),
    lastPlanRenewal: timestamp('last_plan_renewal', { withTimezone: true, mode: 'date' }),
    nextPlanRenewal: timestamp('next_plan_renewal', { withTimezone: true, mode: 'date' }),
    scheduledPlanId: text('scheduled_plan_id'),
    // Chosen amounts that take effect with the scheduled change (a downgrade waits for renewal).
    scheduledPlanVariableAmounts: jsonb('scheduled_plan_variable_amounts').$type<ChosenAmounts | null>(),
    // Periods are counted from the anchor (plan start) so month ends never drift.
    planAnchorAt: timestamp('plan_anchor_at', { withTimezone: true, mode: 'date' }),
    planPeriods: integer('plan_periods').notNull().default(0),
    renewalAttempts: integer('renewal_attempts').notNull().default(0),
    // Renewal cents below the smallest card payment, not charged yet: added to the next renewal's charge.
    carriedCents: bigint('carried_cents', { mode: 'number' }).notNull().default(0),
    renewalRetryAt: timestamp('renewal_retry_at', { withTimezone: true, mode: 'date' }),
    renewalLockedUntil: timestamp('renewal_locked_until', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('accounts_company').on(t.companyId, t.id),
    index('accounts_next_renewal').on(t.nextPlanRenewal).where(sql`${t.nextPlanRenewal} is not null`),
    uniqueIndex('accounts_company_external_id').on(t.companyId, t.externalId),
    // The account search (ilike '%term%' on each column) reads candidates from this index
    // instead of every account of the company.
    index('accounts_search').using('gin', t.name.op('gin_trgm_ops'), t.email.op('gin_trgm_ops'), t.externalId.op('gin_trgm_ops')),
    check('accounts_external_id_length', sql`char_length(${t.externalId}) between 1 and 255`),
    check('accounts_carried_cents_range', sql`${t.carriedCents} >= 0 and ${t.carriedCents} < 50`),
    check('accounts_plan_status_known', isOneOf(t.planStatus, PLAN_STATUSES)),
    check('accounts_plan_renewal_cadence_known', isOneOf(t.planRenewalCadence, RENEWAL_CADENCES)),
  ],
);

export type Account = typeof accounts.$inferSelect;

// One-time links to the hosted card collector; only the hash of the token is stored.
export const collectorLinks = pgTable(
  'collector_links',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull().references(() => accounts.id),
    tokenHash: text('token_hash').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    // Set once a card was saved through the link: it is then used up.
    usedAt: timestamp('used_at', { withTimezone: true, mode: 'date' }),
    // A card submission under way: one at a time per link. Ends by itself if the process dies.
    busyUntil: timestamp('busy_until', { withTimezone: true, mode: 'date' }),
    // Declined cards and refused card tokens; at MAX_FAILED_ATTEMPTS the link is spent.
    failedAttempts: integer('failed_attempts').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    uniqueIndex('collector_links_token').on(t.tokenHash),
    index('collector_links_account').on(t.accountId),
    check('collector_links_failed_attempts_nonneg', sql`${t.failedAttempts} >= 0`),
  ],
);

// Links to the customer portal (a page of one account, without sign-in); only the hash of the
// token is stored. A link stays usable until it expires or failed card attempts spend it.
export const portalLinks = pgTable(
  'portal_links',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull().references(() => accounts.id),
    tokenHash: text('token_hash').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    // A card submission under way: one at a time per link, so failed attempts are counted
    // before the next one starts. Ends by itself if the process dies.
    busyUntil: timestamp('busy_until', { withTimezone: true, mode: 'date' }),
    // Declined cards and refused card tokens; at MAX_FAILED_ATTEMPTS the link is spent.
    failedAttempts: integer('failed_attempts').notNull().default(0),
    // Revoked by the company (the link, or all of the account's): the page and its card call stop.
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    uniqueIndex('portal_links_token').on(t.tokenHash),
    index('portal_links_account').on(t.accountId),
    check('portal_links_failed_attempts_nonneg', sql`${t.failedAttempts} >= 0`),
  ],
);

/**
 * The latest changeplan preview of an account that credits unused time: a changeplan with the
 * same plan and chosen amounts soon after it, from the same plan period, is priced as of the
 * preview's time, so it charges exactly what the preview said (the credit depends on the time).
 * One row per account: each preview replaces it.
 */
export const planChangeQuotes = pgTable('plan_change_quotes', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id, { onDelete: 'cascade' }),
  planId: text('plan_id').notNull(),
  // The chosen amounts as sorted JSON text ('{}' for none): compared as written.
  chosen: text('chosen').notNull(),
  // The plan and period the credit was for: a quote outlives neither.
  fromPlanId: text('from_plan_id').notNull(),
  periodStart: timestamp('period_start', { withTimezone: true, mode: 'date' }).notNull(),
  quotedAt: timestamp('quoted_at', { withTimezone: true, mode: 'date' }).notNull(),
});
