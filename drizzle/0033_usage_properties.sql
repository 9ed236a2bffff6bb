CREATE TABLE "usage_hourly_properties" (
	"company_id" text NOT NULL,
	"account_id" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"property" text NOT NULL,
	"value" text,
	"denomination" text NOT NULL,
	"events" bigint NOT NULL,
	"cost" numeric,
	"quantities" jsonb
);
--> statement-breakpoint
CREATE TABLE "usage_property_marks" (
	"company_id" text NOT NULL,
	"property" text NOT NULL,
	"from_hour" timestamp with time zone,
	CONSTRAINT "usage_property_marks_pkey" PRIMARY KEY("company_id","property")
);
--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "usage_properties" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "usage_hourly_properties_read" ON "usage_hourly_properties" USING btree ("company_id","account_id","property","hour");--> statement-breakpoint
CREATE INDEX "usage_hourly_properties_hour" ON "usage_hourly_properties" USING btree ("hour");