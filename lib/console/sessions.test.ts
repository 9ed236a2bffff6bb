import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startAppServer } from '../testing/servers';

const onPostgres = process.env.TEST_DB === 'postgres';

describe.skipIf(onPostgres)('APP_SECRET at start', () => {
  it('a server with an APP_SECRET shorter than 32 bytes stops with a message naming it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'short-secret-'));
    try {
      await expect(startAppServer({ DATA_DIR: dir, APP_SECRET: 'test-secret', WORKER: '0' })).rejects.toThrow(/server exited early:[\s\S]*APP_SECRET must be at least 32 bytes long \(it has 11\)/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
