import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { companies } from './companies';
import { DELIVERY_STATUSES, isOneOf, NOTIFICATION_STATE_KINDS, TOPICS, WEBHOOK_STYLES } from './enums';

export const webhooks = pgTable(
  'webhooks',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').notNull().references(() => companies.id),
    url: text('url').notNull(),
    username: text('username'),
    passwordEnc: text('password_enc'),
    // The Standard Webhooks signing secret (`whsec_` + base64), encrypted like the password.
    secretEnc: text('secret_enc').notNull(),
    // Decides the payload shape.
    style: text('style', { enum: WEBHOOK_STYLES }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('webhooks_company').on(t.companyId, t.id),
    // Variant A registrations of one url share one webhook (and so one signing secret).
    uniqueIndex('webhooks_type_url').on(t.companyId, t.url).where(sql`style = 'type'`),
    check('webhooks_style_known', isOneOf(t.style, WEBHOOK_STYLES)),
  ],
);

export const webhookSubscriptions = pgTable(
  'webhook_subscriptions',
  {
    webhookId: text('webhook_id').notNull().references(() => webhooks.id, { onDelete: 'cascade' }),
    companyId: text('company_id').notNull(),
    topic: text('topic', { enum: TOPICS }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    uniqueIndex('webhook_subscriptions_pk').on(t.webhookId, t.topic),
    index('webhook_subscriptions_company').on(t.companyId, t.topic),
    check('webhook_subscriptions_topic_known', isOneOf(t.topic, TOPICS)),
  ],
);

// The outbox: one row per (webhook, notification), written in the change's transaction.
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').notNull(),
    webhookId: text('webhook_id').notNull(),
    topic: text('topic', { enum: TOPICS }).notNull(),
    accountId: text('account_id'),
    denomination: text('denomination'),
    payload: jsonb('payload').notNull(),
    status: text('status', { enum: DELIVERY_STATUSES }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }),
    coalesceKey: text('coalesce_key'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('webhook_deliveries_webhook').on(t.webhookId, t.id),
    // Only unfinished deliveries are ever claimed, coalesced into or pulled forward: keep those indexes small.
    index('webhook_deliveries_due').on(t.nextAttemptAt).where(sql`status in ('pending', 'sending')`),
    index('webhook_deliveries_coalesce').on(t.coalesceKey).where(sql`status = 'pending'`),
    // A balance_change is claimed only while no other of its key is in flight (lib/db/sql/deliveries.ts).
    index('webhook_deliveries_coalesce_sending').on(t.coalesceKey).where(sql`status = 'sending'`),
    index('webhook_deliveries_webhook_pending').on(t.webhookId, t.nextAttemptAt).where(sql`status = 'pending'`),
    // Retention finds finished deliveries by their last attempt (lib/db/retention.ts).
    index('webhook_deliveries_finished').on(t.updatedAt).where(sql`status in ('succeeded', 'failed', 'cancelled')`),
    check('webhook_deliveries_status_known', isOneOf(t.status, DELIVERY_STATUSES)),
    check('webhook_deliveries_topic_known', isOneOf(t.topic, TOPICS)),
  ],
);

export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: text('id').primaryKey(),
    deliveryId: text('delivery_id').notNull(),
    responseStatus: integer('response_status'),
    error: text('error'),
    durationMs: integer('duration_ms').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('webhook_attempts_delivery').on(t.deliveryId, t.createdAt)],
);

// Crossing state (below zero, paused, threshold) so crossings notify once, not once per event.
export const notificationStates = pgTable(
  'notification_states',
  {
    balanceId: text('balance_id').notNull(),
    kind: text('kind', { enum: NOTIFICATION_STATE_KINDS }).notNull(),
    period: text('period').notNull().default(''),
    payload: jsonb('payload'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [uniqueIndex('notification_states_pk').on(t.balanceId, t.kind, t.period), check('notification_states_kind_known', isOneOf(t.kind, NOTIFICATION_STATE_KINDS))],
);
