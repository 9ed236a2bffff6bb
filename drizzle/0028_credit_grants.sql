CREATE TABLE "credit_grants" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"account_id" text NOT NULL,
	"balance_id" text NOT NULL,
	"denomination" text NOT NULL,
	"amount" numeric NOT NULL,
	"remaining" numeric NOT NULL,
	"category" text NOT NULL,
	"source" text NOT NULL,
	"priority" integer DEFAULT 50 NOT NULL,
	"effective_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone,
	"cost_basis" numeric,
	"active" boolean NOT NULL,
	"closed_at" timestamp with time zone,
	"voided_at" timestamp with time zone,
	"charge_id" text,
	"description" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "credit_grants_amounts" CHECK ("credit_grants"."amount" > 0 and "credit_grants"."remaining" >= 0 and "credit_grants"."remaining" <= "credit_grants"."amount"),
	CONSTRAINT "credit_grants_priority" CHECK ("credit_grants"."priority" between 0 and 100),
	CONSTRAINT "credit_grants_cost_basis" CHECK (coalesce("credit_grants"."cost_basis", 0) >= 0),
	CONSTRAINT "credit_grants_category_known" CHECK ("credit_grants"."category" in ('paid', 'promotional')),
	CONSTRAINT "credit_grants_source_known" CHECK ("credit_grants"."source" in ('plan', 'deposit', 'refill', 'grant'))
);
--> statement-breakpoint
ALTER TABLE "transactions" DROP CONSTRAINT "transactions_type_known";--> statement-breakpoint
ALTER TABLE "balances" ADD COLUMN "head_grant_id" text;--> statement-breakpoint
ALTER TABLE "balances" ADD COLUMN "head_remaining" numeric;--> statement-breakpoint
ALTER TABLE "balances" ADD COLUMN "grants_due_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "transactions" ADD COLUMN "grant_id" text;--> statement-breakpoint
CREATE INDEX "credit_grants_open" ON "credit_grants" USING btree ("balance_id") WHERE "credit_grants"."closed_at" is null;--> statement-breakpoint
CREATE INDEX "credit_grants_account" ON "credit_grants" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "balances_grants_due" ON "balances" USING btree ("grants_due_at") WHERE "balances"."grants_due_at" is not null;--> statement-breakpoint
-- IF NOT EXISTS: on a large ledger it can be built beforehand with CREATE INDEX CONCURRENTLY (README).
CREATE INDEX IF NOT EXISTS "transactions_grant" ON "transactions" USING btree ("grant_id") WHERE "transactions"."grant_id" is not null;--> statement-breakpoint
ALTER TABLE "transactions" ADD CONSTRAINT "transactions_type_known" CHECK ("transactions"."type" in ('event', 'grant', 'deposit', 'refill', 'refill_threshold', 'refill_cancelled', 'plan_grant', 'plan_reset', 'expire', 'void', 'overage'));--> statement-breakpoint
-- Every balance's units become a grant, no amount changed: a plan balance's are its allowance,
-- ending with the current period; any other balance's, paid units that never expire. A balance
-- at or below zero has none left (what is below zero is paid first by its next grant).
INSERT INTO "credit_grants" ("id", "company_id", "account_id", "balance_id", "denomination", "amount", "remaining", "category", "source", "priority",
  "effective_at", "expires_at", "cost_basis", "active", "closed_at", "voided_at", "charge_id", "description", "created_at")
SELECT 'cg_' || split_part(b."id", '_', 2), b."company_id", b."account_id", b."id", b."denomination", b."amount", b."amount",
  CASE WHEN b."managed_by_plan_id" IS NOT NULL AND coalesce(a."plan_charge_amount", p."charge_amount", 0) = 0 THEN 'promotional' ELSE 'paid' END,
  CASE WHEN b."managed_by_plan_id" IS NOT NULL THEN 'plan' ELSE 'grant' END,
  50,
  least(b."created_at", coalesce(a."last_plan_renewal", b."created_at")),
  CASE WHEN b."managed_by_plan_id" IS NOT NULL AND a."plan_status" IN ('ACTIVE', 'PAST_DUE') AND a."next_plan_renewal" > least(b."created_at", coalesce(a."last_plan_renewal", b."created_at"))
    THEN a."next_plan_renewal" END,
  NULL, true, NULL, NULL, NULL,
  CASE WHEN b."managed_by_plan_id" IS NOT NULL THEN 'Units of the plan period under way when credit grants began' ELSE 'Units held when credit grants began' END,
  b."created_at"
FROM "balances" b
LEFT JOIN "accounts" a ON a."id" = b."account_id"
LEFT JOIN "plans" p ON p."id" = b."managed_by_plan_id"
WHERE b."amount" > 0;--> statement-breakpoint
UPDATE "balances" b SET "head_grant_id" = g."id", "head_remaining" = g."remaining", "grants_due_at" = g."expires_at"
FROM "credit_grants" g WHERE g."balance_id" = b."id";
