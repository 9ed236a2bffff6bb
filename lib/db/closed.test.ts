import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { closeDatabase, getDatabase } from './client';
import { withSettings } from '../env';
import { migratedDataDir } from '../testing/templates';

describe('the process-wide database, once the stop closed it', () => {
  it('is not opened again (a late worker tick or scrape would reopen it and take DATA_DIR back)', async () => {
    // Already migrated: the close is the subject, not a first open (initdb and every migration).
    const dir = await migratedDataDir('closed-');
    try {
      const { db, kind } = await withSettings({ DATA_DIR: dir, DATABASE_URL: undefined }, getDatabase);
      expect(kind).toBe('embedded');
      expect(db).toBeTruthy();
      await closeDatabase();
      expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
      await expect(getDatabase()).rejects.toThrow('The database is closed: this process is stopping.');
      expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
