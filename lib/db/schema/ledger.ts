import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, jsonb, numeric, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { accounts } from './accounts';
import { CHARGE_CURRENCIES, CHARGE_REASONS, CHARGE_STATUSES, EVENT_STATES, GRANT_CATEGORIES, GRANT_SOURCES, isOneOf, PRICED_BY, REJECT_REASONS, TRANSACTION_TYPES } from './enums';

/** A monthly refill change waiting for the next monthly refill. */
export type StoredRefillChange = { amount: string; usd_charge: number; effective_at: string };
/** How a plan rule priced an event: the rule's index and each component's quantity and amount (exact decimal strings). */
export type StoredPricing = { rule: number; components: { quantity: string; amount: string }[] };

export const balances = pgTable(
  'balances',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull().references(() => accounts.id),
    companyId: text('company_id').notNull(),
    denomination: text('denomination').notNull(),
    amount: numeric('amount').notNull().default('0'),
    refillThreshold: numeric('refill_threshold'),
    refillAmount: numeric('refill_amount'),
    refillUsdAmount: bigint('refill_usd_amount', { mode: 'number' }),
    refillOnDay: text('refill_on_day'),
    // At most this many threshold refills are charged in a calendar month (UTC); null: no cap.
    refillMaxChargesPerMonth: integer('refill_max_charges_per_month'),
    lastPeriodicRefill: timestamp('last_periodic_refill', { withTimezone: true, mode: 'date' }),
    nextPeriodicRefill: timestamp('next_periodic_refill', { withTimezone: true, mode: 'date' }),
    scheduledRefill: jsonb('scheduled_refill').$type<StoredRefillChange | null>(),
    // The paid grants this balance's refills make expire this many days after they are made (null: never).
    refillExpiresAfterDays: integer('refill_expires_after_days'),
    // The customer turned the company's threshold refill off in the portal: it is kept, and charges nothing until turned on again.
    thresholdRefillOff: boolean('threshold_refill_off').notNull().default(false),
    managedByPlanId: text('managed_by_plan_id'),
    includedAmount: numeric('included_amount'),
    // The grant draws take from now, and what it has left (its credit_grants row is written back
    // when another becomes the head): events move this row only. Null: no grant has any left.
    headGrantId: text('head_grant_id'),
    headRemaining: numeric('head_remaining'),
    // When an open grant next expires or takes effect: from then on, until the move that writes
    // it, the one-statement paths hand the balance to the general path.
    grantsDueAt: timestamp('grants_due_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    uniqueIndex('balances_account_denomination').on(t.accountId, t.denomination),
    index('balances_grants_due').on(t.grantsDueAt).where(sql`${t.grantsDueAt} is not null`),
    index('balances_next_refill').on(t.nextPeriodicRefill).where(sql`${t.nextPeriodicRefill} is not null`),
    check('balances_refill_nonneg', sql`coalesce(${t.refillUsdAmount}, 0) >= 0 and coalesce(${t.refillAmount}, 0) >= 0`),
    check('balances_refill_expiry_days', sql`${t.refillExpiresAfterDays} is null or ${t.refillExpiresAfterDays} between 1 and 3650`),
  ],
);

export const transactions = pgTable(
  'transactions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    companyId: text('company_id').notNull(),
    // No foreign key: a ledger row is only ever written with the id of a balance its statement
    // holds locked (a balance is deleted only while unused: no ledger row, and no charge that is or
    // may be paid for it), and a key would cost every event's ledger row a
    // lookup inside the lock window of its balance (bench/README.md). Nor an index: nothing
    // reads the ledger by balance (lists and sums go by account).
    balanceId: text('balance_id').notNull(),
    denomination: text('denomination').notNull(),
    type: text('type', { enum: TRANSACTION_TYPES }).notNull(),
    description: text('description').notNull(),
    amount: numeric('amount').notNull(),
    startingBalance: numeric('starting_balance').notNull(),
    endingBalance: numeric('ending_balance').notNull(),
    eventId: text('event_id'),
    chargeId: text('charge_id'),
    // The credit grant the row added, drew from, expired or voided; null for a draw past every grant (below zero).
    grantId: text('grant_id'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    index('transactions_account').on(t.accountId, t.id),
    index('transactions_grant').on(t.grantId).where(sql`${t.grantId} is not null`),
    check('transactions_consistent', sql`${t.endingBalance} = ${t.startingBalance} + ${t.amount}`),
    check('transactions_type_known', isOneOf(t.type, TRANSACTION_TYPES)),
  ],
);

/**
 * Every unit added to a balance is a grant: drawn by priority, then soonest expiry (never last),
 * then oldest. `remaining` is exact for every grant but the balance's head, whose remaining the
 * balance row keeps (`head_remaining`). `active`: its amount is in the balance (it has taken
 * effect); `closed_at`: its expiry or void was written (nothing of it can change any more).
 */
export const creditGrants = pgTable(
  'credit_grants',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').notNull(),
    accountId: text('account_id').notNull(),
    balanceId: text('balance_id').notNull(),
    denomination: text('denomination').notNull(),
    amount: numeric('amount').notNull(),
    remaining: numeric('remaining').notNull(),
    category: text('category', { enum: GRANT_CATEGORIES }).notNull(),
    source: text('source', { enum: GRANT_SOURCES }).notNull(),
    priority: integer('priority').notNull().default(50),
    effectiveAt: timestamp('effective_at', { withTimezone: true, mode: 'date' }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    // USD cents paid per unit; null when nothing was paid for the units (promotional, a plan's allowance).
    costBasis: numeric('cost_basis'),
    active: boolean('active').notNull(),
    closedAt: timestamp('closed_at', { withTimezone: true, mode: 'date' }),
    voidedAt: timestamp('voided_at', { withTimezone: true, mode: 'date' }),
    chargeId: text('charge_id'),
    description: text('description').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    index('credit_grants_open').on(t.balanceId).where(sql`${t.closedAt} is null`),
    index('credit_grants_account').on(t.accountId, t.id),
    check('credit_grants_amounts', sql`${t.amount} > 0 and ${t.remaining} >= 0 and ${t.remaining} <= ${t.amount}`),
    check('credit_grants_priority', sql`${t.priority} between 0 and 100`),
    check('credit_grants_cost_basis', sql`coalesce(${t.costBasis}, 0) >= 0`),
    check('credit_grants_category_known', isOneOf(t.category, GRANT_CATEGORIES)),
    check('credit_grants_source_known', isOneOf(t.source, GRANT_SOURCES)),
  ],
);

export const events = pgTable(
  'events',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').notNull(),
    accountId: text('account_id').notNull(),
    type: text('type').notNull(),
    state: text('state', { enum: EVENT_STATES }).notNull(),
    costAmount: numeric('cost_amount'),
    costDenomination: text('cost_denomination'),
    pricedBy: text('priced_by', { enum: PRICED_BY }).notNull(),
    gateOnBalance: boolean('gate_on_balance').notNull().default(false),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
    idempotencyKey: text('idempotency_key'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    // Usage the caller measured (name → exact decimal string) and facts about the event (flat).
    quantities: jsonb('quantities').$type<Record<string, string> | null>(),
    properties: jsonb('properties').$type<Record<string, string | number | boolean> | null>(),
    pricing: jsonb('pricing').$type<StoredPricing | null>(),
    // What a hold held when placed; `cost` is what it settled at.
    heldCost: numeric('held_cost'),
    reason: text('reason', { enum: REJECT_REASONS }),
  },
  (t) => [
    uniqueIndex('events_idempotency').on(t.companyId, t.idempotencyKey).where(sql`${t.idempotencyKey} is not null`),
    index('events_company').on(t.companyId, t.id),
    index('events_company_created').on(t.companyId, t.createdAt),
    index('events_account').on(t.accountId, t.id),
    index('events_company_state').on(t.companyId, t.state, t.id),
    index('events_company_type').on(t.companyId, t.type, t.id),
    index('events_pending').on(t.accountId, t.costDenomination, t.expiresAt).where(sql`${t.state} = 'pending'`),
    index('events_pending_expiry').on(t.expiresAt).where(sql`${t.state} = 'pending'`),
    check('events_cost_nonneg', sql`coalesce(${t.costAmount}, 0) >= 0`),
    check('events_state_known', isOneOf(t.state, EVENT_STATES)),
    check('events_priced_by_known', isOneOf(t.pricedBy, PRICED_BY)),
    check('events_reason_known', sql`${t.reason} is null or ${isOneOf(t.reason, REJECT_REASONS)}`),
  ],
);

export const charges = pgTable(
  'charges',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').notNull(),
    accountId: text('account_id').notNull(),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    currency: text('currency', { enum: CHARGE_CURRENCIES }).notNull().default('usd'),
    reason: text('reason', { enum: CHARGE_REASONS }).notNull(),
    description: text('description').notNull(),
    status: text('status', { enum: CHARGE_STATUSES }).notNull(),
    processorPaymentIntentId: text('processor_payment_intent_id'),
    processorPaymentMethodId: text('processor_payment_method_id'),
    failureCode: text('failure_code'),
    failureMessage: text('failure_message'),
    // The card the charge was sent to, as it was then (its receipt shows it).
    cardBrand: text('card_brand'),
    cardLast4: text('card_last4'),
    metadata: jsonb('metadata').notNull(),
    // Set by work that may be retried (a job, a renewal attempt): the retry finds this charge.
    workKey: text('work_key'),
    // Real (wall-clock) times of the first and the latest send of the charge's payment to the
    // processor, written before each send: the processor keeps an idempotency key 24 hours from
    // its first use, by its own clock, whatever the service's (test) clock says.
    firstSentAt: timestamp('first_sent_at', { withTimezone: true, mode: 'date' }),
    lastSentAt: timestamp('last_sent_at', { withTimezone: true, mode: 'date' }),
    // How many sends were made: a refusal heard for the first send is final only if no other followed it.
    sendCount: integer('send_count').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('charges_account').on(t.accountId, t.id),
    uniqueIndex('charges_work_key').on(t.companyId, t.workKey).where(sql`${t.workKey} is not null`),
    index('charges_pending').on(t.createdAt).where(sql`${t.status} = 'pending'`),
    check('charges_amount_nonneg', sql`${t.amount} >= 0`),
    check('charges_currency_known', isOneOf(t.currency, CHARGE_CURRENCIES)),
    check('charges_status_known', isOneOf(t.status, CHARGE_STATUSES)),
    check('charges_reason_known', isOneOf(t.reason, CHARGE_REASONS)),
  ],
);
