ALTER TABLE "accounts" ADD COLUMN "carried_cents" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
-- NOT VALID: every existing row holds the default 0, and scanning the table for it would keep the
-- lock this transaction holds on accounts for as long; rows written from now on are checked.
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_carried_cents_range" CHECK ("accounts"."carried_cents" >= 0 and "accounts"."carried_cents" < 50) NOT VALID;
