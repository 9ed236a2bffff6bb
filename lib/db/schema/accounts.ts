import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { companies } from './companies';

export type Flag = { name: string; enabled: boolean };
export type PaymentMethodSummary = { id: string; brand: string; last4: string; exp_month: number; exp_year: number };

export const plans = pgTable(
  'plans',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').notNull().references(() => companies.id),
    name: text('name').notNull(),
    chargeAmount: bigint('charge_amount', { mode: 'number' }).notNull(),
    chargeDenomination: text('charge_denomination').notNull(),
    billingPeriod: text('billing_period').notNull(),
    overageChargeMode: text('overage_charge_mode').notNull(),
    thresholdAlertPercentage: text('threshold_alert_percentage'),
    balances: jsonb('balances').notNull(),
    billingRules: jsonb('billing_rules').notNull(),
    flags: jsonb('flags').notNull(),
    metadata: jsonb('metadata').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [index('plans_company').on(t.companyId, t.id), check('plans_charge_nonneg', sql`${t.chargeAmount} >= 0`)],
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
    metadata: jsonb('metadata').notNull(),
    processorId: text('processor_id'),
    paymentMethod: jsonb('payment_method').$type<PaymentMethodSummary | null>(),
    billingAddressId: text('billing_address_id'),
    planId: text('plan_id').references(() => plans.id),
    planStatus: text('plan_status').notNull().default('NONE'),
    planRenewalCadence: text('plan_renewal_cadence').notNull().default('MONTHLY'),
    planVariableAmounts: jsonb('plan_variable_amounts'),
    planChargeAmount: bigint('plan_charge_amount', { mode: 'number' }),
    flags: jsonb('flags').$type<Flag[]>().notNull(),
    lastPlanRenewal: timestamp('last_plan_renewal', { withTimezone: true, mode: 'date' }),
    nextPlanRenewal: timestamp('next_plan_renewal', { withTimezone: true, mode: 'date' }),
    scheduledPlanId: text('scheduled_plan_id'),
    // Chosen amounts that take effect with the scheduled change (a downgrade waits for renewal).
    scheduledPlanVariableAmounts: jsonb('scheduled_plan_variable_amounts'),
    // Periods are counted from the anchor (plan start) so month ends never drift.
    planAnchorAt: timestamp('plan_anchor_at', { withTimezone: true, mode: 'date' }),
    planPeriods: integer('plan_periods').notNull().default(0),
    renewalAttempts: integer('renewal_attempts').notNull().default(0),
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
    usedAt: timestamp('used_at', { withTimezone: true, mode: 'date' }),
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
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    uniqueIndex('portal_links_token').on(t.tokenHash),
    index('portal_links_account').on(t.accountId),
    check('portal_links_failed_attempts_nonneg', sql`${t.failedAttempts} >= 0`),
  ],
);
