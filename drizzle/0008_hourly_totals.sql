CREATE TABLE "hourly_totals" (
	"company_id" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"kind" text NOT NULL,
	"state" text NOT NULL,
	"denomination" text NOT NULL,
	"count" bigint NOT NULL,
	"total" numeric,
	CONSTRAINT "hourly_totals_pkey" PRIMARY KEY("company_id","hour","kind","state","denomination")
);
