import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../testing/harness';
import { query, sql } from './client';
import { vacuumEmbedded } from './maintenance';
import { lockMark } from './roll-up';

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

describe("PostgreSQL's JIT compiler", () => {
  // Whether the statement after `before` in one transaction was JIT-compiled, with the threshold at 0
  // so that every statement would be while JIT is on.
  const compiled = async (before: (tx: Parameters<Parameters<typeof t.database.db.transaction>[0]>[0]) => Promise<unknown>) =>
    t.database.db.transaction(async (tx) => {
      await before(tx);
      await query(tx, sql`select set_config('jit_above_cost', '0', true)`);
      const [row] = await query<{ 'QUERY PLAN': unknown }>(tx, sql`explain (analyze, format json) select sum(g) from generate_series(1, 1000) g`);
      const [setting] = await query<{ jit: string }>(tx, sql`select current_setting('jit') as jit`);
      return { jit: JSON.stringify(row['QUERY PLAN']).includes('"JIT"'), setting: setting.jit };
    });

  it('is off for the rest of a roll-up transaction once it takes its mark', async () => {
    const off = await compiled((tx) => lockMark(tx, 'probe:no-jit'));
    expect(off).toEqual({ jit: false, setting: 'off' });
    if (t.kind === 'postgres') {
      // The same statement without the mark is compiled: the check above can fail.
      const [{ available }] = await query<{ available: boolean }>(t.database.db, sql`select pg_jit_available() as available`);
      expect(available).toBe(true);
      expect(await compiled(async () => {})).toEqual({ jit: true, setting: 'on' });
    }
  });
});
