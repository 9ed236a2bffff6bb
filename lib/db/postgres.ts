import * as schema from './schema';
import { setting } from '../env';
import { driverTarget } from './hosts';
import { preparedStatements } from './statements';
import { migrationsFolder } from './migrations';
import type { Database, Db } from './types';

// PostgreSQL through postgres.js: the pool, its prepared statements, and migrations under an advisory lock.

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
