ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_topic_known";--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" DROP CONSTRAINT "webhook_subscriptions_topic_known";--> statement-breakpoint
-- NOT VALID: every existing row holds one of the earlier topics, all of them still in the list, and
-- scanning webhook_deliveries for it would keep this transaction's lock on it for as long; rows
-- written from now on are checked.
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_topic_known" CHECK ("webhook_deliveries"."topic" in ('pause_balance', 'negative_balance', 'balance_change', 'auto_refill', 'threshold', 'refill_failed', 'payment_failed', 'card_changed')) NOT VALID;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "webhook_subscriptions_topic_known" CHECK ("webhook_subscriptions"."topic" in ('pause_balance', 'negative_balance', 'balance_change', 'auto_refill', 'threshold', 'refill_failed', 'payment_failed', 'card_changed')) NOT VALID;
