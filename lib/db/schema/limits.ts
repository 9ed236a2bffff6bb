import { sql } from 'drizzle-orm';
import { check, integer, numeric, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { isOneOf, SPEND_ACTIONS, SPEND_PERIODS } from './enums';

/**
 * Graduated tier counters: an account's quantity of one rule's component since its plan period
 * began (`period_start` is the account's `last_plan_renewal`, so a renewal or an upgrade starts a
 * new count). Written by the transaction that debits the event, under the balance's row lock, so
 * one account's events count in order and different accounts never wait on each other.
 */
export const usageCounters = pgTable(
  'usage_counters',
  {
    accountId: text('account_id').notNull(),
    planId: text('plan_id').notNull(),
    periodStart: timestamp('period_start', { withTimezone: true, mode: 'date' }).notNull(),
    rule: integer('rule').notNull(),
    component: integer('component').notNull(),
    used: numeric('used').notNull(),
  },
  (t) => [primaryKey({ name: 'usage_counters_pk', columns: [t.accountId, t.planId, t.periodStart, t.rule, t.component] }), check('usage_counters_nonneg', sql`${t.used} >= 0`)],
);

/** An account's spend limits per denomination and period; `action` says what passing one does. */
export const spendLimits = pgTable(
  'spend_limits',
  {
    accountId: text('account_id').notNull(),
    denomination: text('denomination').notNull(),
    period: text('period', { enum: SPEND_PERIODS }).notNull(),
    action: text('action', { enum: SPEND_ACTIONS }).notNull(),
    limitAmount: numeric('limit_amount').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'spend_limits_pk', columns: [t.accountId, t.denomination, t.period, t.action] }),
    check('spend_limits_nonneg', sql`${t.limitAmount} >= 0`),
    check('spend_limits_period_known', isOneOf(t.period, SPEND_PERIODS)),
    check('spend_limits_action_known', isOneOf(t.action, SPEND_ACTIONS)),
  ],
);

/**
 * What completed events cost per account, denomination and period, kept only where a spend limit
 * is set (setting one counts the period so far). Moved by the statement that debits the event,
 * under the balance's row lock; spend = this + the live holds.
 */
export const spendCounters = pgTable(
  'spend_counters',
  {
    accountId: text('account_id').notNull(),
    denomination: text('denomination').notNull(),
    period: text('period', { enum: SPEND_PERIODS }).notNull(),
    periodStart: timestamp('period_start', { withTimezone: true, mode: 'date' }).notNull(),
    spent: numeric('spent').notNull(),
  },
  (t) => [primaryKey({ name: 'spend_counters_pk', columns: [t.accountId, t.denomination, t.period, t.periodStart] }), check('spend_counters_period_known', isOneOf(t.period, SPEND_PERIODS))],
);
