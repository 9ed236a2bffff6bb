import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Placeholder, sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import * as schema from './schema';
import { log } from '../log';
import { setting } from '../env';
import { driverTarget } from './hosts';

export type Schema = typeof schema;
/** A database handle or an open transaction: domain functions take either. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type DbKind = 'embedded' | 'postgres';

export interface Database {
  db: Db;
  kind: DbKind;
  /** Applies the committed migrations not applied yet (PostgreSQL: under an advisory lock). */
  migrate(): Promise<void>;
  close(): Promise<void>;
  /** The embedded database: settles when its thread stopped by itself; every statement fails from then on. */
  lost?: Promise<Error>;
}

/** The committed migrations: `drizzle/` beside the server (the repository, or /app in the image). */
export const migrationsFolder = path.join(process.cwd(), 'drizzle');

/** Runs raw SQL and returns rows, hiding the two drivers' different result shapes. */
export async function query<T = Record<string, unknown>>(db: Db, statement: SQL): Promise<T[]> {
  const result = (await db.execute(statement)) as unknown;
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/** A statement turned into SQL text once, with named placeholders (`sql.placeholder('x')`). */
export type Compiled = { text: string; params: unknown[] };

/**
 * Builds a hot statement's SQL text once. Running it skips drizzle's query builder and goes
 * straight to the driver as a prepared statement: on the one-statement event path that
 * per-call work cost more than the statement itself (bench/README.md).
 */
export function compile(statement: SQL): Compiled {
  const q = new PgDialect().sqlToQuery(statement);
  return { text: q.sql, params: q.params };
}

type DriverClient = {
  unsafe?: (text: string, params: unknown[], options: { prepare: boolean }) => Promise<unknown[]>;
  query?: (text: string, params: unknown[]) => Promise<{ rows: unknown[] }>;
};

/** Runs a compiled statement on a database handle or an open transaction, with these values. */
export async function runCompiled<T = Record<string, unknown>>(db: Db, statement: Compiled, values: Record<string, unknown>): Promise<T[]> {
  const params = statement.params.map((p) => {
    if (!(p instanceof Placeholder)) return p;
    if (!(p.name in values)) throw new Error(`no value for placeholder ${p.name}`);
    return values[p.name];
  });
  const client = (db as unknown as { session: { client: DriverClient } }).session.client;
  if (client.unsafe) return (await client.unsafe(statement.text, params, { prepare: preparedStatements() })) as T[];
  return (await client.query!(statement.text, params)).rows as T[];
}

export async function openPostgres(url: string, opts: { max?: number; migrate?: boolean; label?: string } = {}): Promise<Database> {
  const { default: postgres } = await import('postgres');
  const { drizzle } = await import('drizzle-orm/postgres-js');
  // Several hosts (a primary and its standbys): each connection goes to the one that fits (lib/db/hosts.ts).
  const target = driverTarget(url, opts.label ?? 'DATABASE_URL', postgres);
  const client = postgres(target.url, {
    // The selector paces its own tries: the driver's backoff, which grows to 20 s after a run of
    // failed connections, would keep a pool away from a new primary long after it took over.
    ...(target.selector && { socket: target.selector.socket as never, backoff: () => 0.25 }),
    max: opts.max ?? setting('DATABASE_POOL_SIZE'),
    // Off, postgres.js's own tagged statements go unnamed too (a pooler's next transaction may
    // land on a server connection that never saw the name).
    prepare: preparedStatements(),
    onnotice: () => {},
    connection: setting('PG_PLAN_CACHE_MODE') ? { plan_cache_mode: setting('PG_PLAN_CACHE_MODE')! } : {},
    // int8 as a JS number, as PGlite does: cents stay exact far beyond any real balance.
    types: { bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } },
  });
  const db = drizzle(preparing(client), { schema }) as unknown as Db;
  const database: Database = {
    db,
    kind: 'postgres',
    migrate: async () => {
      const { migrate } = await import('drizzle-orm/postgres-js/migrator');
      // Several app and worker processes may start together: one migrates, the others wait.
      // The lock and the migrations are one transaction, so a transaction-mode pooler (which
      // hands each transaction any server connection) keeps them together, and the lock ends
      // with the transaction even if this process dies. drizzle's own transaction around the
      // migrations becomes a savepoint inside it (and reads the type parsers from the client).
      await client.begin(async (tx) => {
        await tx.unsafe('select pg_advisory_xact_lock(727274)');
        const inside = new Proxy(tx, {
          get: (t, p) => (p === 'begin' ? t.savepoint.bind(t) : p === 'options' ? client.options : Reflect.get(t, p)),
        });
        await migrate(drizzle(inside as unknown as PgClient, { schema }), { migrationsFolder });
      });
    },
    close: () => client.end({ timeout: 5 }),
  };
  if (opts.migrate !== false) {
    try {
      await database.migrate();
    } catch (err) {
      await client.end({ timeout: 1 }).catch(() => {});
      throw err;
    }
  }
  return database;
}

type PgClient = import('postgres').Sql;

/** DATABASE_PREPARE=0 for connection poolers that cannot keep prepared statements (PgBouncer in transaction mode). */
const preparedStatements = () => setting('DATABASE_PREPARE');

/**
 * The postgres.js client as drizzle should use it: every statement with parameters is a named
 * prepared statement, parsed once per connection, and PostgreSQL may keep its plan. drizzle
 * sends unnamed statements otherwise, which PostgreSQL parses and plans on every call: for the
 * one-statement event path that planning cost more than running it (bench/README.md).
 */
function preparing(client: PgClient): PgClient {
  if (!preparedStatements()) return client;
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === 'unsafe') {
        return (query: string, args?: unknown[], options: Record<string, unknown> = {}) =>
          target.unsafe(query, args as never, { ...options, prepare: Boolean(args?.length) || Boolean(options.prepare) });
      }
      if (prop === 'begin') {
        return (...a: unknown[]) => {
          const fn = a[a.length - 1] as (tx: PgClient) => unknown;
          return (target.begin as (...b: unknown[]) => unknown)(...a.slice(0, -1), (tx: PgClient) => fn(preparing(tx)));
        };
      }
      if (prop === 'savepoint') {
        return (...a: unknown[]) => {
          const fn = a[a.length - 1] as (tx: PgClient) => unknown;
          return ((target as unknown as { savepoint: (...b: unknown[]) => unknown }).savepoint)(...a.slice(0, -1), (tx: PgClient) => fn(preparing(tx)));
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The embedded databases' handles, process-wide: their upkeep differs (lib/db/maintenance.ts). */
const embeddedHandles: WeakSet<object> = ((globalThis as { __billingEmbeddedHandles?: WeakSet<object> }).__billingEmbeddedHandles ??= new WeakSet());

/** True for a handle of the embedded database (PGlite), false for PostgreSQL's. */
export function isEmbedded(db: Db): boolean {
  return embeddedHandles.has(db);
}

/**
 * Opens the embedded database. PGlite takes no lock of its own and two processes on one
 * directory silently corrupt it, so we hold an exclusive lock file for the process lifetime.
 */
export async function openEmbedded(dataDir: string | null, opts: { migrate?: boolean } = {}): Promise<Database> {
  const { drizzle } = await import('drizzle-orm/pglite');
  const { PGliteThread } = await import('./pglite-thread');
  let release = () => {};
  if (dataDir) {
    fs.mkdirSync(dataDir, { recursive: true });
    release = await lockDataDir(dataDir);
  }
  // PGlite runs on a thread of its own: a statement no longer stops the server's thread.
  const client = new PGliteThread(dataDir ? path.join(dataDir, 'pg') : null);
  try {
    await client.waitReady;
  } catch (err) {
    release();
    throw err;
  }
  const db = drizzle({ client: client as never, schema }) as unknown as Db;
  embeddedHandles.add(db);
  const database: Database = {
    db,
    kind: 'embedded',
    lost: client.lost,
    migrate: async () => {
      const { migrate } = await import('drizzle-orm/pglite/migrator');
      await migrate(drizzle({ client: client as never, schema }), { migrationsFolder });
    },
    close: async () => {
      await client.close();
      release();
    },
  };
  if (opts.migrate !== false) await database.migrate();
  return database;
}

export class DataDirLockedError extends Error {}

/**
 * A lock's holder, as its LOCK file names it: process id, host name, process-id namespace (two
 * containers can share a host name, never a namespace; their process ids mean nothing to each
 * other) and a token of its own.
 */
type LockHolder = { pid: number; host: string; ns: string; token: string; boot?: string };
/** The holder touches its LOCK this often; one untouched for LOCK_STALE_MS elsewhere is taken as left behind. */
const LOCK_HEARTBEAT_MS = 5_000;
const LOCK_STALE_MS = 30_000;
/** The tokens of the locks this process holds, across its module instances. */
const heldHere: Set<string> = ((globalThis as { __billingDataDirLocks?: Set<string> }).__billingDataDirLocks ??= new Set());

function pidNamespace(): string {
  try {
    return fs.readlinkSync('/proc/self/ns/pid');
  } catch {
    return '';
  }
}

/** This boot of the machine: a lock written before a reboot names a process that is gone, whatever its id is now. */
function bootId(): string {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
}

function readLock(lockPath: string): { text: string; holder: LockHolder | null; ageMs: number } {
  const text = fs.readFileSync(lockPath, 'utf8');
  const ageMs = Date.now() - fs.statSync(lockPath).mtimeMs;
  // Older versions wrote the bare process id, on this host.
  if (/^\d+$/.test(text.trim())) return { text, holder: { pid: Number(text.trim()), host: os.hostname(), ns: pidNamespace(), token: '' }, ageMs };
  try {
    const h = JSON.parse(text) as LockHolder;
    const ok = typeof h?.pid === 'number' && typeof h.host === 'string' && typeof h.token === 'string';
    return { text, holder: ok ? { ...h, ns: typeof h.ns === 'string' ? h.ns : '', boot: typeof h.boot === 'string' ? h.boot : undefined } : null, ageMs };
  } catch {
    return { text, holder: null, ageMs };
  }
}

/**
 * Takes DATA_DIR for this process: PGlite takes no lock itself, and two processes on one data
 * directory lose data. The LOCK file names its holder (LockHolder), which touches it every 5 s.
 * A lock is left behind, and taken over, when its holder shares this process's host and
 * namespace and its process is gone (or its id is now this process's, after a container
 * restart, or it was written before the machine last booted), or when it is elsewhere (another
 * container on the same volume) and has not been touched for 30 s (a lock elsewhere that is fresh is watched that long first). A LOCK still
 * being written counts as held. A stale lock is moved aside and compared before it goes, so two
 * processes taking it over at once do not both go on holding it: a holder whose lock was removed
 * or taken stops at its next heartbeat.
 */
export async function lockDataDir(dataDir: string, { watchMs = LOCK_STALE_MS + LOCK_HEARTBEAT_MS }: { watchMs?: number } = {}): Promise<() => void> {
  const lockPath = path.join(dataDir, 'LOCK');
  // A lock held elsewhere is watched this long before it counts as in use: a container restarted
  // after an unclean stop (a new namespace) finds its own last lock, which goes stale meanwhile.
  const watchUntil = Date.now() + watchMs;
  let told = false;
  const me: LockHolder = { pid: process.pid, host: os.hostname(), ns: pidNamespace(), token: randomUUID(), boot: bootId() };
  const mine = () => lockState(lockPath, me.token) === 'mine';
  for (let attempt = 0; attempt < 1000; attempt++) {
    try {
      const fd = fs.openSync(lockPath, 'wx');
      fs.writeSync(fd, JSON.stringify(me));
      fs.closeSync(fd);
      let unreadable = 0;
      const heartbeat = setInterval(() => {
        const state = lockState(lockPath, me.token);
        // EMFILE, EIO...: not a sign that the lock went, and it is still touched so that it does
        // not go stale meanwhile; unreadable for as long as a lock takes to go stale, it is given up.
        unreadable = state === 'unreadable' ? unreadable + 1 : 0;
        if (unreadable * LOCK_HEARTBEAT_MS >= LOCK_STALE_MS) {
          log.fatal(`The lock on ${path.resolve(dataDir)} could not be read for ${LOCK_STALE_MS / 1000} s: stopping before another process takes it over.`);
          process.exit(1);
        }
        if (state === 'lost') {
          // Removed or taken by another process: two writers would corrupt the database.
          log.fatal(`The lock on ${path.resolve(dataDir)} was removed or taken by another process: stopping before two processes write the embedded database.`);
          process.exit(1);
        }
        const t = new Date();
        try {
          fs.utimesSync(lockPath, t, t);
        } catch {
          /* gone meanwhile */
        }
      }, LOCK_HEARTBEAT_MS);
      heartbeat.unref();
      heldHere.add(me.token);
      const release = () => {
        clearInterval(heartbeat);
        heldHere.delete(me.token);
        try {
          if (mine()) fs.unlinkSync(lockPath);
        } catch {
          /* already gone */
        }
      };
      process.once('exit', release);
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let seen: ReturnType<typeof readLock>;
      try {
        seen = readLock(lockPath);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile
        throw e;
      }
      const { holder, ageMs } = seen;
      const here = holder !== null && holder.host === me.host && holder.ns === me.ns;
      // This very process holds it already (another module instance opened the database).
      if (here && heldHere.has(holder.token)) return () => {};
      // Here, a lock from before the machine's last boot is left behind: its process id may now be another's.
      const rebooted = here && Boolean(holder.boot && me.boot && holder.boot !== me.boot);
      const held = here ? !rebooted && holder.pid !== process.pid && isAlive(holder.pid) : ageMs < LOCK_STALE_MS;
      if (held && !here && Date.now() < watchUntil) {
        if (!told) log.warn(`${path.resolve(dataDir)} is locked by process ${holder?.pid ?? '?'} on host ${holder?.host ?? '?'}; waiting up to ${Math.round(watchMs / 1000)} s to see whether it is still in use`);
        told = true;
        await new Promise((r) => setTimeout(r, 1_000));
        continue;
      }
      if (held) {
        const who = holder === null ? 'another process' : `process ${holder.pid}${here ? '' : ` on host ${holder.host}`}`;
        throw new DataDirLockedError(
          `The embedded database in ${path.resolve(dataDir)} is in use by ${who}. ` +
            `Stop that process, or use another DATA_DIR, or run on PostgreSQL with DATABASE_URL to share a database between processes.`,
        );
      }
      takeOverStale(lockPath, seen.text, me.token);
    }
  }
  throw new DataDirLockedError(`Could not lock ${path.resolve(dataDir)}`);
}

/** Whether the LOCK is still this holder's: `lost` only when it was read and is another's, or is gone. */
function lockState(lockPath: string, token: string): 'mine' | 'lost' | 'unreadable' {
  try {
    return readLock(lockPath).holder?.token === token ? 'mine' : 'lost';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'lost' : 'unreadable';
  }
}

/**
 * Removes a lock left behind, only if it is still the one judged stale (`text`): it is moved
 * aside first, so of two processes taking it over at once only one moves it, and a lock another
 * process made meanwhile is put back.
 */
function takeOverStale(lockPath: string, text: string, token: string): void {
  // Joined, not a template literal: the build's file tracing reads `${a}.${b}` as a pattern
  // matching every file of the project, and the image then carried the whole repository.
  const aside = path.join(path.dirname(lockPath), 'LOCK.' + token);
  try {
    fs.renameSync(lockPath, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (fs.readFileSync(aside, 'utf8') !== text) {
    try {
      // Put back only where no lock is (an exclusive copy works on every filesystem).
      fs.copyFileSync(aside, lockPath, fs.constants.COPYFILE_EXCL);
    } catch (err) {
      // EEXIST: a third process made one meanwhile and holds the directory; the one put aside
      // finds its lock gone at its next heartbeat and stops.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  fs.unlinkSync(aside);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * `closed`: the process is stopping (closeDatabase ran): the database is not opened again.
 * `companions`: other pools of the process (a read replica's), closed with it.
 */
type Holder = { promise?: Promise<Database>; database?: Database; closed?: boolean; companions?: Database[] };
const holder: Holder = ((globalThis as { __billingDb?: Holder }).__billingDb ??= {});

/** MIGRATE=0: this process leaves migrating to `npm run db:migrate` (readiness then checks they are applied). */
export const migratesAtStart = () => setting('MIGRATE');

/**
 * The process-wide database, opened once (route handlers, pages and instrumentation share it).
 * A failed open is not kept: the next caller tries again (PostgreSQL may come up after us).
 */
export function getDatabase(): Promise<Database> {
  if (holder.closed) return Promise.reject(new Error('The database is closed: this process is stopping.'));
  if (!holder.promise) {
    const url = setting('DATABASE_URL');
    const migrate = migratesAtStart();
    const opening: Promise<Database> = (url ? openPostgres(url, { migrate }) : openEmbedded(setting('DATA_DIR'), { migrate })).then((d) => {
      // Not when the stop closed it while it was opening.
      if (holder.promise === opening) holder.database = d;
      return d;
    });
    holder.promise = opening;
    opening.catch((err) => {
      if (err instanceof DataDirLockedError) {
        log.fatal(err.message);
        process.exit(1);
      }
      if (holder.promise === opening) holder.promise = undefined;
    });
  }
  return holder.promise;
}

/** Closes the process-wide database if it was opened (the stop sequence); it is not opened again in this process. */
export async function closeDatabase(): Promise<void> {
  holder.closed = true;
  const opening = holder.promise;
  holder.promise = undefined;
  holder.database = undefined;
  const database = await opening?.catch(() => null);
  await database?.close();
  for (const companion of holder.companions?.splice(0) ?? []) await companion.close().catch(() => {});
}

/** Closes another pool of this process (a read replica's) when the process-wide database closes. */
export function keepUntilClose(database: Database): void {
  if (holder.closed) {
    void database.close().catch(() => {});
    return;
  }
  (holder.companions ??= []).push(database);
}

type JournalEntry = { idx: number; when: number; tag: string };
let journal: JournalEntry[] | undefined;

/** The committed migrations, oldest first (drizzle/meta/_journal.json). */
export function committedMigrations(): JournalEntry[] {
  journal ??= (JSON.parse(fs.readFileSync(path.join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as { entries: JournalEntry[] }).entries;
  return journal;
}

/**
 * The committed migrations this database has not applied yet. drizzle applies, in order, every
 * migration newer than the newest one it recorded, so the same rule tells what it would apply.
 */
export async function pendingMigrations(db: Db): Promise<JournalEntry[]> {
  const [{ exists }] = await query<{ exists: boolean }>(db, sql`select to_regclass('drizzle.__drizzle_migrations') is not null as exists`);
  let latest = -Infinity;
  if (exists) {
    const [row] = await query<{ latest: string | number | null }>(db, sql`select max(created_at) as latest from drizzle.__drizzle_migrations`);
    if (row?.latest !== null && row?.latest !== undefined) latest = Number(row.latest);
  }
  return committedMigrations().filter((m) => m.when > latest);
}

export async function getDb(): Promise<Db> {
  return (await getDatabase()).db;
}

/** Lets tests install a database of their choosing as the process-wide one. */
export function setDatabase(database: Database): void {
  holder.database = database;
  holder.promise = Promise.resolve(database);
}

export { sql };

/**
 * One parameter holding a whole column, for set-based statements (`unnest(${textArray(xs)})`):
 * a 1000-row insert sends a dozen parameters instead of thousands. Cast in SQL
 * (`::text[]::numeric[]`). The column goes as PostgreSQL's array literal, written here: both
 * drivers pass a string for an array parameter through as it is, and their own writers ran two
 * regular expressions over every element (a tenth of a batch's server time).
 */
export function textArray(values: readonly (string | null)[]): SQL {
  return sql`${sql.param(arrayLiteral(values))}::text[]`;
}

/**
 * PostgreSQL's text form of a one-dimensional text array: every element quoted (so no content
 * needs any other care), `"` and `\` escaped with a backslash, NULL bare.
 */
export function arrayLiteral(values: readonly (string | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v: unknown = values[i];
    if (i > 0) out += ',';
    if (v === null) {
      out += 'NULL';
      continue;
    }
    if (v === undefined) throw new Error(`textArray: element ${i} is undefined`);
    const text = typeof v === 'string' ? v : String(v);
    out += text.includes('"') || text.includes('\\') ? `"${text.replace(/["\\]/g, '\\$&')}"` : `"${text}"`;
  }
  return `${out}}`;
}

/** True when a database error (or one it wraps) is a unique-constraint violation. */
export function isUniqueViolation(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i++) {
    if ((e as { code?: string }).code === '23505') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
