import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
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
 * The migrated database every test file starts from, made by the projects' global setups:
 * migrating from nothing in every file cost seconds a file (PGlite's first start runs initdb in
 * WebAssembly). On PostgreSQL a template database made once per run; on PGlite a data directory
 * made once for the migrations it holds. lib/db/migrate.test.ts still migrates from nothing, on
 * every engine.
 */
export const TEMPLATE_DATABASE = 'billing_template';

const root = path.resolve(__dirname, '../..');

/** Where the embedded databases of a run live: memory-backed when the machine has /dev/shm. */
export function embeddedBase(): string {
  const shm = '/dev/shm';
  const base = fs.existsSync(shm) && fs.statSync(shm).isDirectory() ? shm : os.tmpdir();
  return path.join(base, 'billing-tests');
}

/**
 * The embedded template's own settings, kept by every copy (its postgresql.auto.conf). PostgreSQL
 * zeroes its shared buffers as it starts, in WebAssembly: 128 MB of them (initdb's value, and the
 * server's) were most of an embedded database's open, which every test file and every server a
 * test starts pays (bench/README.md, "An embedded test database's open"). A test database holds
 * a few megabytes.
 */
const TEMPLATE_SETTINGS = { shared_buffers: '16MB' };

/** What the migrated database depends on: the committed migrations, PGlite's version and the template's settings. */
function templateKey(): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(TEMPLATE_SETTINGS));
  const folder = path.join(root, 'drizzle');
  for (const file of fs.readdirSync(folder, { recursive: true }).map(String).sort()) {
    const full = path.join(folder, file);
    if (fs.statSync(full).isFile()) hash.update(file).update(fs.readFileSync(full));
  }
  hash.update(fs.readFileSync(path.join(root, 'node_modules/@electric-sql/pglite/package.json')));
  return hash.digest('hex').slice(0, 16);
}

/**
 * A migrated embedded data directory (DATA_DIR layout), made once for these migrations and kept
 * in .test-data/templates (a later run reuses it). Made aside and renamed into place: processes
 * making it at once each make their own, and the first to finish is kept.
 */
export async function embeddedTemplate(): Promise<string> {
  const dir = path.join(root, '.test-data', 'templates', `embedded-${templateKey()}`);
  if (fs.existsSync(path.join(dir, 'pg'))) return dir;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const making = fs.mkdtempSync(`${dir}.making-`);
  try {
    const database = await openEmbedded(making);
    for (const [name, value] of Object.entries(TEMPLATE_SETTINGS)) await database.db.execute(sql.raw(`alter system set ${name} = '${value}'`));
    await database.close();
    fs.renameSync(making, dir);
  } catch (err) {
    if (!fs.existsSync(path.join(dir, 'pg'))) throw err;
  } finally {
    fs.rmSync(making, { recursive: true, force: true });
  }
  return dir;
}

const copies = new Set<string>();

/**
 * A copy of the embedded template, for one test file or one server a test starts: PGlite opens
 * it with nothing to migrate. Removed when the test process exits, if not before.
 */
export function copyEmbeddedTemplate(template: string, prefix = 'db-'): string {
  fs.mkdirSync(embeddedBase(), { recursive: true });
  const dir = fs.mkdtempSync(path.join(embeddedBase(), prefix));
  // In memory where /dev/shm is: gone with the test process at the latest, whatever became of the test.
  if (!copies.size) process.once('exit', () => copies.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
  copies.add(dir);
  fs.cpSync(template, dir, { recursive: true });
  return dir;
}

/**
 * A DATA_DIR for a server a test starts, already migrated (copied from the template): for a test
 * about what the server does, not about its first start on an empty directory.
 */
export async function migratedDataDir(prefix: string): Promise<string> {
  return copyEmbeddedTemplate(await embeddedTemplate(), prefix);
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
