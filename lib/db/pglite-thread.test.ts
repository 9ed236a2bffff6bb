import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { isUniqueViolation, openEmbedded, query, runCompiled, compile, type Database } from './client';
import { PGlite } from '@electric-sql/pglite';
import { PGliteThread, pgliteModule } from './pglite-thread';
import { migratedDataDir } from '../testing/templates';

const keep = (value: string) => value;

// The embedded engine's own client, apart from any test database: these run once, in the unit
// project. Each database starts from a copy of the migrated template (PGlite's first start in
// an empty directory or in memory runs initdb, seconds of WebAssembly); the tables are its own.
const migratedPgDir = async () => path.join(await migratedDataDir('billing-thread-'), 'pg');

describe('the embedded database on its own thread', () => {
  let thread: PGliteThread;
  beforeAll(async () => {
    thread = new PGliteThread(await migratedPgDir());
    await thread.waitReady;
    await thread.exec('create table t (id text primary key, n numeric not null, at timestamptz)');
  });
  afterAll(() => thread?.close());

  it("opens on PGlite's module compiled once a process, which every thread is handed", async () => {
    // Without the module (its file not found) each thread compiles its own: still correct, but
    // every open pays the compile again, which this catches.
    const wasm = await pgliteModule();
    expect(wasm).toBeInstanceOf(WebAssembly.Module);
    expect(await pgliteModule()).toBe(wasm);
    const other = new PGliteThread(await migratedPgDir(), wasm);
    try {
      await other.waitReady;
      expect((await other.query<{ n: number }>('select 41 + 1 as n')).rows).toEqual([{ n: 42 }]);
    } finally {
      await other.close();
    }
  });

  it('keeps the server thread free while a statement runs', async () => {
    // ~0.5-2 s of work inside PostgreSQL; on the server's thread, no timer could fire meanwhile.
    const ticks: number[] = [];
    const timer = setInterval(() => ticks.push(performance.now()), 10);
    const started = performance.now();
    const r = await thread.query<{ n: number }>('select count(*)::int as n from generate_series(1, 3000000) g where g % 7 = 0');
    const took = performance.now() - started;
    clearInterval(timer);
    expect(r.rows[0].n).toBe(428571);
    expect(took).toBeGreaterThan(100);
    // Timers kept firing all along: the largest gap is a small part of the statement's time.
    const gaps = ticks.slice(1).map((t, i) => t - ticks[i]);
    expect(ticks.length).toBeGreaterThan(5);
    expect(Math.max(...gaps)).toBeLessThan(took / 2);
  });

  it('runs a statement again under its prepared name with new values, and keeps arrays and types exact', async () => {
    const insert = 'insert into t (id, n, at) values ($1, $2, $3) returning id, n::text as n, at';
    const at = new Date('2026-01-02T03:04:05.678Z');
    for (let i = 0; i < 8; i++) {
      const r = await thread.query<{ id: string; n: string; at: Date }>(insert, [`p${i}`, `${i}.000000000001`, at]);
      expect(r.rows).toEqual([{ id: `p${i}`, n: `${i}.000000000001`, at }]);
    }
    const many = await thread.query<{ id: string }>('select id from t where id = any($1::text[]) order by id', [['p1', 'p3', 'nope']]);
    expect(many.rows.map((r) => r.id)).toEqual(['p1', 'p3']);
    // The insert was prepared once under a name; the statement over an array was not.
    const prepared = async (text: string) => (await thread.query<{ n: number }>('select count(*)::int as n from pg_prepared_statements where statement = $1', [text])).rows[0].n;
    expect(await prepared(insert)).toBe(1);
    expect(await prepared('select id from t where id = any($1::text[]) order by id')).toBe(0);
    const arrays = await thread.query('select id, n from t where id = $1', ['p2'], { rowMode: 'array' });
    expect(arrays.rows).toEqual([['p2', '2.000000000001']]);
    // A type parser that keeps the text (as drizzle's are) reads the timestamp as PostgreSQL wrote it.
    const text = await thread.query<{ at: string }>('select at from t where id = $1', ['p0'], { parsers: { 1184: (v: string) => v } });
    expect(text.rows[0].at).toBe('2026-01-02 03:04:05.678+00');
    // The parsers are kept per set of text-keeping types: the same statement without any reads a Date again.
    expect((await thread.query<{ at: Date }>('select at from t where id = $1', ['p0'])).rows[0].at).toEqual(at);
    expect((await thread.query<{ at: string }>('select at from t where id = any($1::text[])', [['p0']], { parsers: { 1184: (v: string) => v } })).rows[0].at).toBe('2026-01-02 03:04:05.678+00');
    expect(() => thread.query('select 1', [], { parsers: { 1184: (v: string) => new Date(v) } })).toThrow(/does not keep the text/);
  });

  it("reads every type's answer as PGlite's own query() does", async () => {
    const own = new PGlite();
    try {
      const text = `select $1::text as t, 'é☃ "quoted", {braced}'::text as u, null::text as n, 42::int4 as i, 9007199254740993::int8 as big,
          1.5::float8 as f, 12345678901234567890.123456789::numeric as num, true as yes, false as no, '{"a":[1,"x"]}'::jsonb as jb,
          '{"b":2}'::json as j, array[1, null, 3]::int4[] as ints, array['a', 'b,c', null]::text[] as texts, array[1.5, 2]::numeric[] as nums,
          '2026-01-02 03:04:05.678+00'::timestamptz as at, '2026-01-02'::date as day, '1 day 02:00'::interval as span, '\\x00ff'::bytea as bin,
          1 as dup, 2 as dup, E'\\uFEFFbom' as "\uFEFFname", 3 as "__proto__", 'x' || chr(65279) as inner
        from generate_series(1, 3) g`;
      for (const rowMode of ['object', 'array'] as const) {
        for (const parsers of [undefined, { 1184: keep, 1082: keep, 1186: keep, 1231: keep }]) {
          const viaThread = await thread.query(text, ['x'], { rowMode, parsers });
          const direct = await own.query(text, ['x'], { rowMode, parsers });
          expect(viaThread.rows).toEqual(direct.rows);
          expect(viaThread.fields).toEqual(direct.fields);
        }
      }
      // Rows a write returns, and the rows it counts.
      await own.exec('create table w (id int primary key)');
      await thread.exec('create table w (id int primary key)');
      for (const write of ['insert into w select g from generate_series(1, 5) g returning id', 'update w set id = id + 10 where id > $1', 'delete from w where id > $1 returning id', 'select 1 where false', '']) {
        const params = write.includes('$1') ? [2] : [];
        const viaThread = await thread.query(write, params);
        const direct = await own.query(write, params);
        expect([viaThread.rows, viaThread.fields, viaThread.affectedRows]).toEqual([direct.rows, direct.fields, direct.affectedRows]);
      }
    } finally {
      await own.close();
    }
  });

  it("rebuilds PostgreSQL's error fields on this side", async () => {
    await thread.query('insert into t (id, n) values ($1, 1)', ['dup']);
    const err = await thread.query('insert into t (id, n) values ($1, 1)', ['dup']).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: '23505', constraint: 't_pkey', table: 't', message: expect.stringMatching(/duplicate key/) });
    expect(isUniqueViolation(err)).toBe(true);
    const syntax = await thread.query('selec 1').catch((e: unknown) => e);
    expect(syntax).toMatchObject({ code: '42601' });
    // A statement that failed to parse was not kept: the thread still answers.
    expect((await thread.query<{ one: number }>('select 1 as one')).rows).toEqual([{ one: 1 }]);
  });

  it('commits or rolls back a transaction, and makes statements outside it wait for its end', async () => {
    await thread.transaction(async (tx) => {
      await tx.query('insert into t (id, n) values ($1, 1)', ['committed']);
    });
    await thread
      .transaction(async (tx) => {
        await tx.query('insert into t (id, n) values ($1, 1)', ['rolled-back']);
        throw new Error('changed my mind');
      })
      .catch(() => {});
    const ids = async () => (await thread.query<{ id: string }>("select id from t where id in ('committed', 'rolled-back', 'late')")).rows.map((r) => r.id).sort();
    expect(await ids()).toEqual(['committed']);

    let outside: Promise<string[]> | undefined;
    await thread.transaction(async (tx) => {
      await tx.query('insert into t (id, n) values ($1, 1)', ['late']);
      outside = ids();
      // The statement outside waits for the commit, so it cannot see the row half-written.
      await new Promise((r) => setTimeout(r, 50));
      const seen = await Promise.race([outside, new Promise((r) => setTimeout(() => r('waiting'), 20))]);
      expect(seen).toBe('waiting');
    });
    expect(await outside).toEqual(['committed', 'late']);

    // An error inside aborts only that transaction.
    const failed = await thread
      .transaction(async (tx) => {
        await tx.query('insert into t (id, n) values ($1, 1)', ['committed']);
      })
      .catch((e: unknown) => e);
    expect(isUniqueViolation(failed)).toBe(true);
    expect(await ids()).toEqual(['committed', 'late']);
  });

  /** Opens a transaction that holds the database until `release()`. */
  async function holdDatabase(order: string[]) {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let opened!: () => void;
    const isOpen = new Promise<void>((r) => (opened = r));
    const done = thread.transaction(async (tx) => {
      await tx.query('insert into t (id, n) values ($1, 2)', ['first']);
      order.push('first wrote');
      opened();
      await held;
      order.push('first commits');
    });
    await isOpen;
    return { release, done };
  }

  it("runs a transaction's first statement, sent with its BEGIN, once that transaction is open", async () => {
    const order: string[] = [];
    const first = await holdDatabase(order);
    // BEGIN waits for the open transaction; the statement sent after it waits for the BEGIN, and
    // then runs inside the second transaction: it sees the first's committed row, and a rollback
    // takes its own row back.
    const second = thread
      .transaction(async (tx) => {
        const seen = await tx.query<{ n: number }>("select count(*)::int as n from t where id = 'first'");
        order.push(`second saw ${seen.rows[0].n}`);
        await tx.query('insert into t (id, n) values ($1, 2)', ['second']);
        throw new Error('roll back the second');
      })
      .catch((e: Error) => e.message);
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toEqual(['first wrote']);
    first.release();
    await first.done;
    expect(await second).toBe('roll back the second');
    expect(order).toEqual(['first wrote', 'first commits', 'second saw 1']);
    const rows = await thread.query<{ id: string }>("select id from t where id in ('first', 'second')");
    expect(rows.rows).toEqual([{ id: 'first' }]);
    await thread.query("delete from t where id = 'first'");
  });

  it('runs the statements of a transaction still opening in the order they were sent, and none after its end', async () => {
    const order: string[] = [];
    const first = await holdDatabase(order);
    // Sent together, without waiting: a statement with parameters (prepared) and one without.
    const together = thread.transaction(async (tx) => {
      const [, count] = await Promise.all([
        tx.query('insert into t (id, n) values ($1, 3)', ['together']),
        tx.query<{ n: number }>("select count(*)::int as n from t where id = 'together'"),
      ]);
      return count.rows[0].n;
    });
    // A statement still on its way when its transaction is rolled back is rolled back with it.
    const abandoned = thread
      .transaction(async (tx) => {
        void tx.query('insert into t (id, n) values ($1, 3)', ['abandoned']).catch(() => {});
        throw new Error('abandon it');
      })
      .catch((e: Error) => e.message);
    first.release();
    await first.done;
    expect(await together).toBe(1);
    expect(await abandoned).toBe('abandon it');
    const rows = await thread.query<{ id: string }>("select id from t where id in ('together', 'abandoned') order by id");
    expect(rows.rows).toEqual([{ id: 'together' }]);
    await thread.query("delete from t where id in ('first', 'together')");
  });

  it('refuses a value that cannot cross to the thread, and goes on answering', async () => {
    await expect(thread.query('select $1::text as v', [{ f: () => 1 }])).rejects.toThrow(/could not be cloned/);
    expect((await thread.query<{ v: string }>('select $1::text as v', ['next'])).rows).toEqual([{ v: 'next' }]);
  });

  it('gives its thread back when the database cannot start', async () => {
    const file = path.join(os.tmpdir(), `billing-not-a-dir-${process.pid}`);
    fs.writeFileSync(file, 'a file where the data directory should be');
    try {
      const broken = new PGliteThread(path.join(file, 'pg'));
      const why = await broken.waitReady.catch((e: unknown) => e);
      expect(why).toBeInstanceOf(Error);
      // The thread is gone: later work is refused with the same reason, without reaching it.
      expect(await broken.query('select 1').catch((e: unknown) => e)).toBe(why);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  it('tells when its thread stops by itself, and not when it is closed', async () => {
    const settled = (p: Promise<unknown>) => Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), 200))]);
    const closed = new PGliteThread(await migratedPgDir());
    await closed.waitReady;
    await closed.close();
    expect(await settled(closed.lost)).toBe(false);

    const lost = new PGliteThread(await migratedPgDir());
    await lost.waitReady;
    expect(await settled(lost.lost)).toBe(false);
    await (lost as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    expect((await lost.lost).message).toMatch(/thread stopped/);
    await expect(lost.query('select 1')).rejects.toThrow(/thread stopped/);
  });

  it('refuses work once closed', async () => {
    const other = new PGliteThread(await migratedPgDir());
    await other.waitReady;
    await other.close();
    await expect(other.query('select 1')).rejects.toThrow(/stopped/);
  });
});

describe('the embedded database through drizzle', () => {
  let database: Database;
  let dir: string;
  beforeAll(async () => {
    dir = await migratedDataDir('billing-thread-');
    database = await openEmbedded(dir);
  });
  afterAll(async () => {
    await database?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps what it wrote in DATA_DIR across a reopen', async () => {
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`create table kept (id text primary key)`);
      await tx.execute(sql`insert into kept values (${'one'})`);
    });
    const stmt = compile(sql`select id from kept where id = ${sql.placeholder('id')}`);
    expect(await runCompiled(database.db, stmt, { id: 'one' })).toEqual([{ id: 'one' }]);
    await database.close();
    database = await openEmbedded(dir);
    expect(await query(database.db, sql`select id from kept`)).toEqual([{ id: 'one' }]);
  });

  it('does not keep a command alive once its work is done', async () => {
    const copy = await migratedDataDir('billing-command-');
    const script = `import('./lib/db/client.ts').then(async (m) => { const d = await m.openEmbedded(${JSON.stringify(copy)}, { migrate: false }); const [r] = await m.query(d.db, m.sql\`select 41 + 1 as n\`); console.log('answer', r.n); })`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: process.cwd(), encoding: 'utf8', timeout: 60_000 });
    expect(r.stdout).toContain('answer 42');
    // Exited by itself, well before the timeout, although nothing closed the database.
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
  });
});
