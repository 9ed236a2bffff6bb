CREATE TABLE "spend_counters" (
	"account_id" text NOT NULL,
	"denomination" text NOT NULL,
	"period" text NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"spent" numeric NOT NULL,
	CONSTRAINT "spend_counters_pk" PRIMARY KEY("account_id","denomination","period","period_start"),
	CONSTRAINT "spend_counters_period_known" CHECK ("spend_counters"."period" in ('day', 'week', 'month'))
);
--> statement-breakpoint
CREATE TABLE "spend_limits" (
	"account_id" text NOT NULL,
	"denomination" text NOT NULL,
	"period" text NOT NULL,
	"action" text NOT NULL,
	"limit_amount" numeric NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "spend_limits_pk" PRIMARY KEY("account_id","denomination","period","action"),
	CONSTRAINT "spend_limits_nonneg" CHECK ("spend_limits"."limit_amount" >= 0),
	CONSTRAINT "spend_limits_period_known" CHECK ("spend_limits"."period" in ('day', 'week', 'month')),
	CONSTRAINT "spend_limits_action_known" CHECK ("spend_limits"."action" in ('reject', 'notify'))
);
--> statement-breakpoint
CREATE TABLE "usage_counters" (
	"account_id" text NOT NULL,
	"plan_id" text NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"rule" integer NOT NULL,
	"component" integer NOT NULL,
	"used" numeric NOT NULL,
	CONSTRAINT "usage_counters_pk" PRIMARY KEY("account_id","plan_id","period_start","rule","component"),
	CONSTRAINT "usage_counters_nonneg" CHECK ("usage_counters"."used" >= 0)
);
--> statement-breakpoint
ALTER TABLE "notification_states" DROP CONSTRAINT "notification_states_kind_known";--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_topic_known";--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" DROP CONSTRAINT "webhook_subscriptions_topic_known";--> statement-breakpoint
ALTER TABLE "balances" ADD COLUMN "refill_max_charges_per_month" integer;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "quantities" jsonb;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "properties" jsonb;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "pricing" jsonb;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "held_cost" numeric;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "reason" text;--> statement-breakpoint
-- NOT VALID on the large tables: every existing row passes (the new column is null, the old
-- topics are all still admitted), and scanning for it would hold their lock as long; rows written
-- from now on are checked.
ALTER TABLE "events" ADD CONSTRAINT "events_reason_known" CHECK ("events"."reason" is null or "events"."reason" in ('insufficient_balance', 'spend_limit')) NOT VALID;--> statement-breakpoint
ALTER TABLE "notification_states" ADD CONSTRAINT "notification_states_kind_known" CHECK ("notification_states"."kind" in ('negative', 'paused', 'refill_threshold', 'plan_threshold', 'spend_limit', 'refill_limit'));--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_topic_known" CHECK ("webhook_deliveries"."topic" in ('pause_balance', 'negative_balance', 'balance_change', 'auto_refill', 'threshold', 'refill_failed', 'payment_failed', 'card_changed', 'spend_limit_reached', 'refill_limit_reached')) NOT VALID;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "webhook_subscriptions_topic_known" CHECK ("webhook_subscriptions"."topic" in ('pause_balance', 'negative_balance', 'balance_change', 'auto_refill', 'threshold', 'refill_failed', 'payment_failed', 'card_changed', 'spend_limit_reached', 'refill_limit_reached'));