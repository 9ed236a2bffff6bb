CREATE TABLE "portal_links" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"token_hash" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"busy_until" timestamp with time zone,
	"failed_attempts" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "portal_links_failed_attempts_nonneg" CHECK ("portal_links"."failed_attempts" >= 0)
);
--> statement-breakpoint
ALTER TABLE "portal_links" ADD CONSTRAINT "portal_links_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "portal_links_token" ON "portal_links" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "portal_links_account" ON "portal_links" USING btree ("account_id");