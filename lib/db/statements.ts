import { Placeholder, sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { setting } from '../env';
import type { Db } from './types';

// Running SQL on either driver: raw statements, statements compiled once, and whole columns as one parameter.

export { sql };

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

/** DATABASE_PREPARE=0 for connection poolers that cannot keep prepared statements (PgBouncer in transaction mode). */
export const preparedStatements = () => setting('DATABASE_PREPARE');

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

/**
 * A select-list item that turns PostgreSQL's JIT compiler off for the rest of the transaction
 * (`set_config(..., true)`: transaction-local, so it holds through a transaction-mode pooler too).
 * The service's statements are short: compiling one costs far more than it saves.
 */
export const NO_JIT = sql`set_config('jit', 'off', true)`;
