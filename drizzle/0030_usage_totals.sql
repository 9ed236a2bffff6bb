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
-- The usage reports sum quantities and group by properties. IF NOT EXISTS: the columns may have
-- come first with the events that carry them.
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "quantities" jsonb;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "properties" jsonb;