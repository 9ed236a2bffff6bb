CREATE TABLE "plan_change_quotes" (
	"account_id" text PRIMARY KEY NOT NULL,
	"plan_id" text NOT NULL,
	"chosen" text NOT NULL,
	"from_plan_id" text NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"quoted_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "plan_change_quotes" ADD CONSTRAINT "plan_change_quotes_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;