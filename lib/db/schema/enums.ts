import { sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';

/**
 * The closed vocabularies of the stored state columns. Each list types its column (drizzle's
 * `text(name, { enum })`) and is the CHECK constraint the database holds it to, so a value the
 * code does not know is refused on write. A CHECK rather than a PostgreSQL enum type: adding a
 * value is one constraint swapped in a migration, which a transaction can do. Adding a value
 * here needs a migration (`npm run db:generate`); removing one, a data migration first.
 */

export const PLAN_STATUSES = ['NONE', 'PENDING_PAYMENT_METHOD', 'ACTIVE', 'PAST_DUE', 'CANCELLED'] as const;
export type PlanStatus = (typeof PLAN_STATUSES)[number];

export const RENEWAL_CADENCES = ['DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY'] as const;
export type RenewalCadence = (typeof RENEWAL_CADENCES)[number];

export const BILLING_PERIODS = ['day', 'week', 'month', 'year'] as const;
export type BillingPeriod = (typeof BILLING_PERIODS)[number];

export const OVERAGE_CHARGE_MODES = ['postpay', 'none'] as const;
export type OverageChargeMode = (typeof OVERAGE_CHARGE_MODES)[number];

/** Plans are priced in US dollars only; charges name the currency in Stripe's lower case. */
export const PLAN_CURRENCIES = ['USD'] as const;
export type PlanCurrency = (typeof PLAN_CURRENCIES)[number];
export const CHARGE_CURRENCIES = ['usd'] as const;
export type ChargeCurrency = (typeof CHARGE_CURRENCIES)[number];

export const CHARGE_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type ChargeStatus = (typeof CHARGE_STATUSES)[number];

/** What a charge pays for. */
export const CHARGE_REASONS = ['deposit', 'refill_monthly', 'refill_threshold', 'plan_start', 'plan_change', 'plan_renewal'] as const;
export type ChargeReason = (typeof CHARGE_REASONS)[number];

export const EVENT_STATES = ['pending', 'complete', 'cancelled', 'rejected'] as const;
export type EventState = (typeof EVENT_STATES)[number];

export const PRICED_BY = ['override', 'plan', 'none'] as const;
export type PricedBy = (typeof PRICED_BY)[number];

/** The kinds of ledger entry. */
export const TRANSACTION_TYPES = ['event', 'grant', 'deposit', 'refill', 'refill_threshold', 'refill_cancelled', 'plan_grant', 'plan_reset', 'expire', 'void', 'overage'] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];

/** What a credit grant's units are: bought (`paid`) or given (`promotional`). */
export const GRANT_CATEGORIES = ['paid', 'promotional'] as const;
export type GrantCategory = (typeof GRANT_CATEGORIES)[number];

/** Where a credit grant came from. */
export const GRANT_SOURCES = ['plan', 'deposit', 'refill', 'grant'] as const;
export type GrantSource = (typeof GRANT_SOURCES)[number];

export const JOB_STATUSES = ['queued', 'running', 'done', 'failed'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const TOPICS = ['pause_balance', 'negative_balance', 'balance_change', 'auto_refill', 'threshold', 'refill_failed', 'payment_failed', 'card_changed'] as const;
export type Topic = (typeof TOPICS)[number];

/** 'topic': registered by topic (payload variant B); 'type': registered with POST /v1/webhooks (variant A). */
export const WEBHOOK_STYLES = ['topic', 'type'] as const;
export type WebhookStyle = (typeof WEBHOOK_STYLES)[number];

/** `sending`: claimed by a worker, `next_attempt_at` is then its lease. */
export const DELIVERY_STATUSES = ['pending', 'sending', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** The crossings a balance is in, each notified once. */
export const NOTIFICATION_STATE_KINDS = ['negative', 'paused', 'refill_threshold', 'plan_threshold'] as const;
export type NotificationStateKind = (typeof NOTIFICATION_STATE_KINDS)[number];

export const IDEMPOTENCY_STATUSES = ['running', 'done', 'retryable'] as const;
export type IdempotencyStatus = (typeof IDEMPOTENCY_STATUSES)[number];

export const ADMIN_ROLES = ['owner', 'admin'] as const;
export type AdminRole = (typeof ADMIN_ROLES)[number];

/**
 * What a row of sign_in_attempts counts against. Sign-in attempts: 'email' (the lower-cased
 * email), 'email_address' (that email from one client address), 'address' (the client address:
 * IPv4, or an IPv6 /64), 'network' (an IPv6 /48), 'global' (every failed attempt). Console
 * actions that hash a password: 'invite' (per company), 'password_change' (per admin).
 */
export const SIGN_IN_SCOPES = ['email', 'address', 'email_address', 'network', 'global', 'invite', 'password_change'] as const;
export type SignInScope = (typeof SIGN_IN_SCOPES)[number];

/** `column in ('a', 'b', ...)`, written into the migration as literals (the values are ours, never input). */
export function isOneOf(column: AnyPgColumn, values: readonly string[]): SQL {
  return sql`${column} in (${sql.raw(values.map((v) => `'${v.replace(/'/g, "''")}'`).join(', '))})`;
}
