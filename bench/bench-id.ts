import { sql } from '../lib/db/client';

/**
 * `bench_id(prefix, ms)`: ids in SQL of the same layout as lib/ids.ts newId (prefix, 10 base32
 * characters of milliseconds, 16 random ones), for seeding millions of rows in one statement.
 */
export const benchIdFunction = sql.raw(`create or replace function bench_id(prefix text, ms bigint) returns text language plpgsql volatile as $$
  declare alphabet constant text := '0123456789abcdefghjkmnpqrstvwxyz'; t text := ''; r text := ''; v bigint := ms;
  begin
    for i in 1..10 loop t := substr(alphabet, (v % 32)::int + 1, 1) || t; v := v / 32; end loop;
    for i in 1..16 loop r := r || substr(alphabet, floor(random() * 32)::int + 1, 1); end loop;
    return prefix || '_' || t || r;
  end $$`);
