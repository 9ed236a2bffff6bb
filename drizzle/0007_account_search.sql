-- Trigram operator classes for the account search index (a trusted extension: the database owner may create it).
CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
CREATE INDEX "accounts_search" ON "accounts" USING gin ("name" gin_trgm_ops,"email" gin_trgm_ops,"external_id" gin_trgm_ops);
