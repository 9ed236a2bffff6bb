-- A ledger row's id, made by the database when the row is written, after the balance it moves
-- is locked: ids are time-ordered and the ledger is listed by id, so ids made by the database's
-- one clock under the lock list a balance's rows in the order the balance moved. Ids made by a
-- server before its statement waited for the lock did not (a writer that took the lock later
-- could hold the older id). The stamp is taken once per statement: 'tx_', ten characters of
-- milliseconds and two of microseconds (Crockford base32, as every id), then eleven random
-- ones. Each row of the statement puts its ordinal (three characters) between the two
-- (ledgerId in lib/ids.ts), so a statement's rows keep their order too.
CREATE OR REPLACE FUNCTION ledger_stamp()
RETURNS text
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  alphabet constant text := '0123456789abcdefghjkmnpqrstvwxyz';
  us bigint := floor(extract(epoch from clock_timestamp()) * 1000000)::bigint;
  n bigint := us / 1000;
  t text := '';
  r text := '';
BEGIN
  FOR i IN 1..10 LOOP
    t := substr(alphabet, (n % 32)::int + 1, 1) || t;
    n := n / 32;
  END LOOP;
  n := us % 1000;
  t := t || substr(alphabet, (n / 32)::int + 1, 1) || substr(alphabet, (n % 32)::int + 1, 1);
  FOR i IN 1..11 LOOP
    r := r || substr(alphabet, floor(random() * 32)::int + 1, 1);
  END LOOP;
  RETURN 'tx_' || t || r;
END
$$;
