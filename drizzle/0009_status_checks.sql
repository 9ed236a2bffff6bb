ALTER TABLE "admins" ADD CONSTRAINT "admins_role_known" CHECK ("admins"."role" in ('owner', 'admin'));--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_status_known" CHECK ("idempotency_keys"."status" in ('running', 'done'));--> statement-breakpoint
ALTER TABLE "sign_in_attempts" ADD CONSTRAINT "sign_in_attempts_scope_known" CHECK ("sign_in_attempts"."scope" in ('email', 'address'));--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_plan_status_known" CHECK ("accounts"."plan_status" in ('NONE', 'PENDING_PAYMENT_METHOD', 'ACTIVE', 'PAST_DUE', 'CANCELLED'));--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_plan_renewal_cadence_known" CHECK ("accounts"."plan_renewal_cadence" in ('DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY'));--> statement-breakpoint
ALTER TABLE "plans" ADD CONSTRAINT "plans_charge_denomination_known" CHECK ("plans"."charge_denomination" in ('USD'));--> statement-breakpoint
ALTER TABLE "plans" ADD CONSTRAINT "plans_billing_period_known" CHECK ("plans"."billing_period" in ('day', 'week', 'month', 'year'));--> statement-breakpoint
ALTER TABLE "plans" ADD CONSTRAINT "plans_overage_charge_mode_known" CHECK ("plans"."overage_charge_mode" in ('postpay', 'none'));--> statement-breakpoint
ALTER TABLE "charges" ADD CONSTRAINT "charges_currency_known" CHECK ("charges"."currency" in ('usd'));--> statement-breakpoint
ALTER TABLE "charges" ADD CONSTRAINT "charges_status_known" CHECK ("charges"."status" in ('pending', 'succeeded', 'failed'));--> statement-breakpoint
ALTER TABLE "charges" ADD CONSTRAINT "charges_reason_known" CHECK ("charges"."reason" in ('deposit', 'refill_monthly', 'refill_threshold', 'plan_start', 'plan_change', 'plan_renewal'));--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_state_known" CHECK ("events"."state" in ('pending', 'complete', 'cancelled', 'rejected'));--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_priced_by_known" CHECK ("events"."priced_by" in ('override', 'plan', 'none'));--> statement-breakpoint
ALTER TABLE "transactions" ADD CONSTRAINT "transactions_type_known" CHECK ("transactions"."type" in ('event', 'grant', 'deposit', 'refill', 'refill_threshold', 'refill_cancelled', 'plan_grant', 'plan_reset'));--> statement-breakpoint
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_status_known" CHECK ("jobs"."status" in ('queued', 'running', 'done', 'failed'));--> statement-breakpoint
ALTER TABLE "notification_states" ADD CONSTRAINT "notification_states_kind_known" CHECK ("notification_states"."kind" in ('negative', 'paused', 'refill_threshold', 'plan_threshold'));--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_status_known" CHECK ("webhook_deliveries"."status" in ('pending', 'sending', 'succeeded', 'failed', 'cancelled'));--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_topic_known" CHECK ("webhook_deliveries"."topic" in ('pause_balance', 'negative_balance', 'balance_change', 'auto_refill', 'threshold', 'refill_failed', 'payment_failed'));--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "webhook_subscriptions_topic_known" CHECK ("webhook_subscriptions"."topic" in ('pause_balance', 'negative_balance', 'balance_change', 'auto_refill', 'threshold', 'refill_failed', 'payment_failed'));--> statement-breakpoint
ALTER TABLE "webhooks" ADD CONSTRAINT "webhooks_style_known" CHECK ("webhooks"."style" in ('topic', 'type'));