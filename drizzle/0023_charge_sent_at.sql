ALTER TABLE "charges" ADD COLUMN "first_sent_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "charges" ADD COLUMN "last_sent_at" timestamp with time zone;--> statement-breakpoint
-- Charges left pending by the version before may have been sent: counted as sent when they were made.
UPDATE "charges" SET "first_sent_at" = "created_at", "last_sent_at" = coalesce("updated_at", "created_at") WHERE "status" = 'pending';
