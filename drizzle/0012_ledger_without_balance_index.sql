-- Nothing reads the ledger by balance (lists and sums go by account): the index only cost every ledger row one more insertion, inside its balance's lock window.
DROP INDEX "transactions_balance";