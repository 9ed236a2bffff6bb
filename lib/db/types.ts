import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type * as schema from './schema';

// The database handle as every layer sees it, whichever driver opened it.

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
