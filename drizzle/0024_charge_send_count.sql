ALTER TABLE "charges" ADD COLUMN "send_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Charges left pending by the version before may have been sent: counted as sent once.
UPDATE "charges" SET "send_count" = 1 WHERE "status" = 'pending';
