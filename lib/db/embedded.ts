import fs from 'node:fs';
import path from 'node:path';
import * as schema from './schema';
import { lockDataDir } from './data-dir-lock';
import { migrationsFolder } from './migrations';
import type { Database, Db } from './types';

// The embedded database (PGlite) on a thread of its own, its DATA_DIR held under an exclusive lock.

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
  const { PGliteThread, pgliteModule } = await import('./pglite-thread');
  let release = () => {};
  if (dataDir) {
    fs.mkdirSync(dataDir, { recursive: true });
    release = await lockDataDir(dataDir);
  }
  // PGlite runs on a thread of its own: a statement no longer stops the server's thread.
  const client = new PGliteThread(dataDir ? path.join(dataDir, 'pg') : null, await pgliteModule());
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
