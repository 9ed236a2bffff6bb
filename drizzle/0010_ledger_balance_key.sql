-- Ledger rows keep their balance id without a foreign key: each is written with the id of a balance its statement holds locked, and balances are never deleted; the key cost every ledger row a lookup inside the lock window.
ALTER TABLE "transactions" DROP CONSTRAINT "transactions_balance_id_balances_id_fk";
