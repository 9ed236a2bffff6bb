ALTER TABLE "accounts" ADD COLUMN "external_id" text;--> statement-breakpoint
CREATE UNIQUE INDEX "accounts_company_external_id" ON "accounts" USING btree ("company_id","external_id");--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_external_id_length" CHECK (char_length("accounts"."external_id") between 1 and 255);