-- Balance rows are updated by every event: half of each page is kept free so that the new version of a row fits beside the old one (a HOT update: no index entry, and the page prunes itself without a vacuum).
ALTER TABLE "balances" SET (fillfactor = 50);
