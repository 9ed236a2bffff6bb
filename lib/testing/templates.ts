import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { openEmbedded, openPostgres } from '../db/client';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The `postgres` database of the project's cluster, as the tests connect to it (through PgBouncer in the pooled project). */
    postgresUrl: string;
    /** The same cluster directly: databases are created and cloned from the template here. */
    postgresAdminUrl: string;
    /** The migrated embedded data directory test files copy (embedded project). */
    embeddedTemplate: string;
  }
}

/**
 * The migrated database every test file starts from, made once per run by the projects' global
 * setups: migrating from nothing in every file cost seconds a file (PGlite's first start runs
 * initdb in WebAssembly). lib/db/migrate.test.ts still migrates from nothing, on every engine.
 */
export const TEMPLATE_DATABASE = 'billing_template';

/** Where the embedded databases of a run live: memory-backed when the machine has /dev/shm. */
export function embeddedBase(): string {
  const shm = '/dev/shm';
  const base = fs.existsSync(shm) && fs.statSync(shm).isDirectory() ? shm : os.tmpdir();
  return path.join(base, 'billing-tests');
}

/** A migrated embedded data directory (DATA_DIR layout) in a fresh directory; answers its path. */
export async function makeEmbeddedTemplate(): Promise<string> {
  fs.mkdirSync(embeddedBase(), { recursive: true });
  const dir = fs.mkdtempSync(path.join(embeddedBase(), `template-${process.pid}-`));
  const database = await openEmbedded(dir);
  await database.close();
  return dir;
}

/** A copy of the embedded template, for one test file: PGlite opens it with nothing to migrate. */
export function copyEmbeddedTemplate(template: string): string {
  const dir = fs.mkdtempSync(path.join(embeddedBase(), 'db-'));
  fs.cpSync(template, dir, { recursive: true });
  return dir;
}

/** Creates and migrates the template database on a cluster (`adminUrl`: its `postgres` database, directly). */
export async function makePostgresTemplate(adminUrl: string): Promise<void> {
  const admin = await openPostgres(adminUrl, { max: 1, migrate: false });
  await admin.db.execute(sql.raw(`drop database if exists ${TEMPLATE_DATABASE}`));
  await admin.db.execute(sql.raw(`create database ${TEMPLATE_DATABASE}`));
  await admin.close();
  // Closed before any clone: PostgreSQL copies a template only while nobody is connected to it.
  const template = await openPostgres(databaseUrl(adminUrl, TEMPLATE_DATABASE), { max: 1 });
  await template.close();
}

/** A new database cloned from the template (`CREATE DATABASE ... TEMPLATE`); answers its name. */
export async function clonePostgresTemplate(adminUrl: string, prefix = 't'): Promise<string> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = await openPostgres(adminUrl, { max: 1, migrate: false });
  try {
    await admin.db.execute(sql.raw(`create database ${name} template ${TEMPLATE_DATABASE}`));
  } finally {
    await admin.close();
  }
  return name;
}

/** The URL of database `name` on the server of `url`. */
export function databaseUrl(url: string, name: string): string {
  return url.replace(/\/[^/]*$/, `/${name}`);
}
