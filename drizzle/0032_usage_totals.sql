CREATE TABLE "usage_hourly" (
	"company_id" text NOT NULL,
	"account_id" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"type" text NOT NULL,
	"denomination" text NOT NULL,
	"events" bigint NOT NULL,
	"cost" numeric,
	"quantities" jsonb,
	CONSTRAINT "usage_hourly_pkey" PRIMARY KEY("company_id","account_id","hour","type","denomination")
);
--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "portal_topups" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "balances" ADD COLUMN "threshold_refill_off" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "charges" ADD COLUMN "card_brand" text;--> statement-breakpoint
ALTER TABLE "charges" ADD COLUMN "card_last4" text;