import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from './testing/harness';
import { withSettings } from './env';
import { admins, apiKeys, companies } from './db/schema';
import { seedDemo } from './boot';

const t = useTestDatabase();
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** The demo company of an empty database, made as a server start started with `nodeEnv`; what it printed and saved. */
async function demoStartedWith(nodeEnv: string | null) {
  const db = t.database.db;
  await db.delete(admins);
  await db.delete(apiKeys);
  await db.delete(companies);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-demo-'));
  dirs.push(dataDir);
  const launcher = globalThis as { __billingStartedNodeEnv?: string | null };
  let printed = '';
  launcher.__billingStartedNodeEnv = nodeEnv;
  try {
    await withSettings({ DATA_DIR: dataDir, STRIPE_API_URL: 'http://127.0.0.1:9' }, () => seedDemo(db, (text) => (printed += text)));
  } finally {
    delete launcher.__billingStartedNodeEnv;
  }
  const file = path.join(dataDir, 'demo.json');
  return { printed, file, saved: JSON.parse(fs.readFileSync(file, 'utf8')), mode: fs.statSync(file).mode & 0o777 };
}

describe('the demo company of a fresh embedded database', () => {
  it('with NODE_ENV=production (as the user set it, before the server launcher sets it again), prints no credentials, only where they are', async () => {
    const { printed, file, saved, mode } = await demoStartedWith('production');
    expect(saved.api_key).toMatch(/^sk_/);
    expect(saved.console_password.length).toBeGreaterThan(8);
    expect(mode).toBe(0o600);
    expect(printed).toContain('Demo company created');
    expect(printed).toContain(file);
    expect(printed).not.toContain(saved.api_key);
    expect(printed).not.toContain(saved.console_password);
  });

  it('otherwise prints them for the person who ran npm start, once', async () => {
    const { printed, saved } = await demoStartedWith(null);
    expect(printed).toContain(saved.company_id);
    expect(printed).toContain(saved.api_key);
    expect(printed).toContain(saved.console_password);
  });
});
