CREATE INDEX IF NOT EXISTS "webhook_deliveries_coalesce_sending" ON "webhook_deliveries" USING btree ("coalesce_key") WHERE status = 'sending';
