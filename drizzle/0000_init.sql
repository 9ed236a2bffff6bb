CREATE TABLE "admins" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"email" text NOT NULL,
	"password_hash" text NOT NULL,
	"role" text DEFAULT 'admin' NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"key_hash" text NOT NULL,
	"last4" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "companies" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"email" text NOT NULL,
	"processor_key_enc" text,
	"processor_publishable_key" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"company_id" text NOT NULL,
	"key" text NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"request_hash" text NOT NULL,
	"status" text NOT NULL,
	"response_status" text,
	"response_body" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "accounts" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"name" text NOT NULL,
	"email" text NOT NULL,
	"metadata" jsonb NOT NULL,
	"processor_id" text,
	"payment_method" jsonb,
	"billing_address_id" text,
	"plan_id" text,
	"plan_status" text DEFAULT 'NONE' NOT NULL,
	"plan_renewal_cadence" text DEFAULT 'MONTHLY' NOT NULL,
	"plan_variable_amounts" jsonb,
	"plan_charge_amount" bigint,
	"flags" jsonb NOT NULL,
	"last_plan_renewal" timestamp with time zone,
	"next_plan_renewal" timestamp with time zone,
	"scheduled_plan_id" text,
	"scheduled_plan_variable_amounts" jsonb,
	"plan_anchor_at" timestamp with time zone,
	"plan_periods" integer DEFAULT 0 NOT NULL,
	"renewal_attempts" integer DEFAULT 0 NOT NULL,
	"renewal_retry_at" timestamp with time zone,
	"renewal_locked_until" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "collector_links" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"token_hash" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "plans" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"name" text NOT NULL,
	"charge_amount" bigint NOT NULL,
	"charge_denomination" text NOT NULL,
	"billing_period" text NOT NULL,
	"overage_charge_mode" text NOT NULL,
	"threshold_alert_percentage" text,
	"balances" jsonb NOT NULL,
	"billing_rules" jsonb NOT NULL,
	"flags" jsonb NOT NULL,
	"metadata" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone,
	CONSTRAINT "plans_charge_nonneg" CHECK ("plans"."charge_amount" >= 0)
);
--> statement-breakpoint
CREATE TABLE "balances" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"company_id" text NOT NULL,
	"denomination" text NOT NULL,
	"amount" numeric DEFAULT '0' NOT NULL,
	"refill_threshold" numeric,
	"refill_amount" numeric,
	"refill_usd_amount" bigint,
	"refill_on_day" text,
	"last_periodic_refill" timestamp with time zone,
	"next_periodic_refill" timestamp with time zone,
	"scheduled_refill" jsonb,
	"managed_by_plan_id" text,
	"included_amount" numeric,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone,
	CONSTRAINT "balances_refill_nonneg" CHECK (coalesce("balances"."refill_usd_amount", 0) >= 0 and coalesce("balances"."refill_amount", 0) >= 0)
);
--> statement-breakpoint
CREATE TABLE "charges" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"account_id" text NOT NULL,
	"amount" bigint NOT NULL,
	"currency" text DEFAULT 'usd' NOT NULL,
	"reason" text NOT NULL,
	"description" text NOT NULL,
	"status" text NOT NULL,
	"processor_payment_intent_id" text,
	"processor_payment_method_id" text,
	"failure_code" text,
	"failure_message" text,
	"metadata" jsonb NOT NULL,
	"work_key" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone,
	CONSTRAINT "charges_amount_nonneg" CHECK ("charges"."amount" >= 0)
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"account_id" text NOT NULL,
	"type" text NOT NULL,
	"state" text NOT NULL,
	"cost_amount" numeric,
	"cost_denomination" text,
	"priced_by" text NOT NULL,
	"gate_on_balance" boolean DEFAULT false NOT NULL,
	"metadata" jsonb NOT NULL,
	"idempotency_key" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone,
	"expires_at" timestamp with time zone,
	CONSTRAINT "events_cost_nonneg" CHECK (coalesce("events"."cost_amount", 0) >= 0)
);
--> statement-breakpoint
CREATE TABLE "transactions" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"company_id" text NOT NULL,
	"balance_id" text NOT NULL,
	"denomination" text NOT NULL,
	"type" text NOT NULL,
	"description" text NOT NULL,
	"amount" numeric NOT NULL,
	"starting_balance" numeric NOT NULL,
	"ending_balance" numeric NOT NULL,
	"event_id" text,
	"charge_id" text,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "transactions_consistent" CHECK ("transactions"."ending_balance" = "transactions"."starting_balance" + "transactions"."amount")
);
--> statement-breakpoint
CREATE TABLE "jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"dedupe_key" text,
	"payload" jsonb NOT NULL,
	"status" text NOT NULL,
	"run_at" timestamp with time zone NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"locked_until" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notification_states" (
	"balance_id" text NOT NULL,
	"kind" text NOT NULL,
	"period" text DEFAULT '' NOT NULL,
	"payload" jsonb,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_attempts" (
	"id" text PRIMARY KEY NOT NULL,
	"delivery_id" text NOT NULL,
	"response_status" integer,
	"error" text,
	"duration_ms" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"webhook_id" text NOT NULL,
	"topic" text NOT NULL,
	"account_id" text,
	"denomination" text,
	"payload" jsonb NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"coalesce_key" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "webhook_subscriptions" (
	"webhook_id" text NOT NULL,
	"company_id" text NOT NULL,
	"topic" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhooks" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"url" text NOT NULL,
	"username" text,
	"password_enc" text,
	"secret_enc" text NOT NULL,
	"style" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "admins" ADD CONSTRAINT "admins_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_plan_id_plans_id_fk" FOREIGN KEY ("plan_id") REFERENCES "public"."plans"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "collector_links" ADD CONSTRAINT "collector_links_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plans" ADD CONSTRAINT "plans_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "balances" ADD CONSTRAINT "balances_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "transactions" ADD CONSTRAINT "transactions_balance_id_balances_id_fk" FOREIGN KEY ("balance_id") REFERENCES "public"."balances"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "webhook_subscriptions_webhook_id_webhooks_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhooks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhooks" ADD CONSTRAINT "webhooks_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "admins_email" ON "admins" USING btree (lower("email"));--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_key_hash" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_company" ON "api_keys" USING btree ("company_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "idempotency_keys_pk" ON "idempotency_keys" USING btree ("company_id","key");--> statement-breakpoint
CREATE INDEX "idempotency_keys_created" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "accounts_company" ON "accounts" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "accounts_next_renewal" ON "accounts" USING btree ("next_plan_renewal") WHERE "accounts"."next_plan_renewal" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "collector_links_token" ON "collector_links" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "collector_links_account" ON "collector_links" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "plans_company" ON "plans" USING btree ("company_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "balances_account_denomination" ON "balances" USING btree ("account_id","denomination");--> statement-breakpoint
CREATE INDEX "balances_next_refill" ON "balances" USING btree ("next_periodic_refill") WHERE "balances"."next_periodic_refill" is not null;--> statement-breakpoint
CREATE INDEX "charges_account" ON "charges" USING btree ("account_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "charges_work_key" ON "charges" USING btree ("company_id","work_key") WHERE "charges"."work_key" is not null;--> statement-breakpoint
CREATE INDEX "charges_pending" ON "charges" USING btree ("created_at") WHERE "charges"."status" = 'pending';--> statement-breakpoint
CREATE UNIQUE INDEX "events_idempotency" ON "events" USING btree ("company_id","idempotency_key") WHERE "events"."idempotency_key" is not null;--> statement-breakpoint
CREATE INDEX "events_company" ON "events" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "events_company_created" ON "events" USING btree ("company_id","created_at");--> statement-breakpoint
CREATE INDEX "events_account" ON "events" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "events_company_state" ON "events" USING btree ("company_id","state","id");--> statement-breakpoint
CREATE INDEX "events_company_type" ON "events" USING btree ("company_id","type","id");--> statement-breakpoint
CREATE INDEX "events_pending" ON "events" USING btree ("account_id","cost_denomination","expires_at") WHERE "events"."state" = 'pending';--> statement-breakpoint
CREATE INDEX "events_pending_expiry" ON "events" USING btree ("expires_at") WHERE "events"."state" = 'pending';--> statement-breakpoint
CREATE INDEX "transactions_account" ON "transactions" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "transactions_balance" ON "transactions" USING btree ("balance_id");--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_dedupe" ON "jobs" USING btree ("kind","dedupe_key") WHERE "jobs"."dedupe_key" is not null and "jobs"."status" in ('queued', 'running');--> statement-breakpoint
CREATE INDEX "jobs_due" ON "jobs" USING btree ("run_at") WHERE "jobs"."status" in ('queued', 'running');--> statement-breakpoint
CREATE UNIQUE INDEX "notification_states_pk" ON "notification_states" USING btree ("balance_id","kind","period");--> statement-breakpoint
CREATE INDEX "webhook_attempts_delivery" ON "webhook_attempts" USING btree ("delivery_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_webhook" ON "webhook_deliveries" USING btree ("webhook_id","id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE status in ('pending', 'sending');--> statement-breakpoint
CREATE INDEX "webhook_deliveries_coalesce" ON "webhook_deliveries" USING btree ("coalesce_key") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "webhook_deliveries_webhook_pending" ON "webhook_deliveries" USING btree ("webhook_id","next_attempt_at") WHERE status = 'pending';--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_subscriptions_pk" ON "webhook_subscriptions" USING btree ("webhook_id","topic");--> statement-breakpoint
CREATE INDEX "webhook_subscriptions_company" ON "webhook_subscriptions" USING btree ("company_id","topic");--> statement-breakpoint
CREATE INDEX "webhooks_company" ON "webhooks" USING btree ("company_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "webhooks_type_url" ON "webhooks" USING btree ("company_id","url") WHERE style = 'type';