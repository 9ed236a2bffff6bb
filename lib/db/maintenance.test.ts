import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../testing/harness';
import { query, sql } from './client';
import { vacuumEmbedded } from './maintenance';

const t = useTestDatabase();

type Stats = { n_dead_tup: number; last_vacuum: unknown; last_analyze: unknown };
const stats = async () => {
  // A backend reports its counts when idle, at most once a second: this one at once.
  await t.database.db.execute(sql.raw('select pg_stat_force_next_flush()'));
  return (await query<Stats>(t.database.db, sql`select n_dead_tup::int as n_dead_tup, last_vacuum, last_analyze from pg_stat_user_tables where relname = 'upkeep_probe'`))[0];
};

describe("the embedded database's autovacuum", () => {
  it('vacuums and analyzes the embedded database when due, and leaves PostgreSQL to its own', async () => {
    const db = t.database.db;
    await db.execute(sql.raw('create table upkeep_probe (id int primary key, n int not null)'));
    await db.execute(sql.raw('insert into upkeep_probe select g, 0 from generate_series(1, 100) g'));
    // Every update leaves a dead row version behind.
    for (let i = 0; i < 5; i++) await db.execute(sql.raw('update upkeep_probe set n = n + 1'));
    const before = await stats();
    // (PostgreSQL's backends report their counts a moment later; the embedded one at once.)
    if (t.kind === 'embedded') expect(before.n_dead_tup).toBeGreaterThan(0);
    expect(before.last_vacuum).toBeNull();

    // Not yet due: a database is vacuumed ten minutes after the worker first saw it, then every ten minutes.
    await vacuumEmbedded(db, new Date());
    expect((await stats()).last_vacuum).toBeNull();

    // A process that is shutting down vacuums no further table.
    await vacuumEmbedded(db, new Date(), { force: true, stopping: () => true });
    expect((await stats()).last_vacuum).toBeNull();

    await vacuumEmbedded(db, new Date(), { force: true });
    const after = await stats();
    if (t.kind === 'embedded') {
      expect(after.n_dead_tup).toBe(0);
      expect(after.last_vacuum).not.toBeNull();
      expect(after.last_analyze).not.toBeNull();
      // Just run: the next is ten minutes away.
      await db.execute(sql.raw('update upkeep_probe set n = n + 1'));
      await vacuumEmbedded(db, new Date());
      expect((await stats()).n_dead_tup).toBeGreaterThan(0);
    } else {
      // PostgreSQL's own autovacuum does this; the task leaves it alone.
      expect(after.last_vacuum).toBeNull();
      expect(after.last_analyze).toBeNull();
    }
  });
});
