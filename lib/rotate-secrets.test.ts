import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from './testing/harness';
import { companies, idempotencyKeys, webhooks } from './db/schema';
import { decrypt, encrypt, isSealedWithCurrentKey } from './crypto';
import { resealStoredSecrets } from './rotate-secrets';
import { withSettings } from './env';

const t = useTestDatabase();
const root = path.resolve(__dirname, '..');
const OLD = process.env.APP_SECRET!;
const NEW = 'the-new-app-secret-of-at-least-32-bytes-0123';
const OTHER = 'a-secret-nobody-configured-of-32-bytes-xxxxxx';

// The stages of a rotation, each in force for what runs inside it.
const rotating = <T>(fn: () => T) => withSettings({ APP_SECRET: NEW, APP_SECRET_PREVIOUS: OLD }, fn);
const rotated = <T>(fn: () => T) => withSettings({ APP_SECRET: NEW, APP_SECRET_PREVIOUS: undefined }, fn);

async function sealedValues() {
  const db = t.database.db;
  return [
    ...(await db.select({ v: companies.processorKeyEnc }).from(companies)).map((r) => r.v),
    ...(await db.select({ v: webhooks.secretEnc }).from(webhooks)).map((r) => r.v),
    ...(await db.select({ v: webhooks.passwordEnc }).from(webhooks)).map((r) => r.v),
    ...(await db.select({ v: idempotencyKeys.responseBody }).from(idempotencyKeys)).map((r) => r.v),
  ].filter((v): v is string => v !== null);
}

async function webhookSecret(id: string) {
  const [row] = await t.database.db.select().from(webhooks).where(eq(webhooks.id, id));
  return decrypt(row.secretEnc);
}

describe('APP_SECRET rotation', () => {
  it('with the old secret in APP_SECRET_PREVIOUS everything keeps working, and secrets:rotate seals every stored secret with the new one', async () => {
    const db = t.database.db;
    const co = await newCompany(t, { processor_key: 'sk_test_rotation', processor_publishable_key: 'pk_test_rotation' });
    const hook = await co.call('POST', '/v1/companies/{company}/webhooks', {
      body: { url: 'https://hooks.example.com/rotation', username: 'hook', password: 'hook password' },
      headers: { 'idempotency-key': 'rotation-hook' },
    });
    expect(hook.status).toBe(200);
    const webhookPath = `/v1/companies/{company}/webhooks/${hook.body.data.id}`;
    const secret = hook.body.data.secret;
    // A company whose key was sealed before key ids existed.
    const legacyCo = await newCompany(t, { processor_key: 'sk_test_legacy' });
    const { createCipheriv, createHash, randomBytes } = await import('node:crypto');
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', createHash('sha256').update(`processor-keys:${OLD}`).digest(), iv);
    const data = Buffer.concat([cipher.update('sk_test_legacy', 'utf8'), cipher.final()]);
    await db.update(companies).set({ processorKeyEnc: [iv, cipher.getAuthTag(), data].map((b) => b.toString('base64url')).join('.') }).where(eq(companies.id, legacyCo.company.id));

    const before = await sealedValues();
    expect(before.length).toBeGreaterThanOrEqual(5);

    const unreadable = withSettings({ APP_SECRET: OTHER }, () => encrypt('sk_test_stranger'));
    let stranger!: Awaited<ReturnType<typeof newCompany>>;
    const report = await rotating(async () => {
      const read = await co.call('GET', webhookPath);
      expect(read.body.data).toMatchObject({ password: 'hook password' });
      expect(await webhookSecret(hook.body.data.id)).toBe(secret);
      // The stored idempotent answer replays.
      const replay = await co.call('POST', '/v1/companies/{company}/webhooks', {
        body: { url: 'https://hooks.example.com/rotation', username: 'hook', password: 'hook password' },
        headers: { 'idempotency-key': 'rotation-hook' },
      });
      expect(replay.body.data.id).toBe(hook.body.data.id);

      // A value neither secret opens is reported, not lost.
      stranger = await newCompany(t, { processor_key: 'sk_test_stranger' });
      await db.update(companies).set({ processorKeyEnc: unreadable }).where(eq(companies.id, stranger.company.id));
      return resealStoredSecrets(db);
    });
    const byColumn = Object.fromEntries(report.map((r) => [r.column, r]));
    expect(byColumn['companies.processor_key_enc'].unreadable).toEqual([stranger.company.id]);
    expect(byColumn['webhooks.secret_enc'].resealed).toBeGreaterThanOrEqual(1);
    expect(byColumn['webhooks.password_enc'].resealed).toBeGreaterThanOrEqual(1);
    expect(byColumn['idempotency_keys.response_body'].resealed).toBeGreaterThanOrEqual(1);
    expect(report.reduce((n, r) => n + r.resealed, 0)).toBe(before.length);
    const after = (await sealedValues()).filter((v) => v !== unreadable);
    await rotating(async () => {
      expect(after.every(isSealedWithCurrentKey)).toBe(true);
      expect((await resealStoredSecrets(db)).reduce((n, r) => n + r.resealed, 0)).toBe(0);
    });

    // The old secret is no longer needed.
    await rotated(async () => {
      expect((await co.call('GET', webhookPath)).body.data).toMatchObject({ password: 'hook password' });
      expect(await webhookSecret(hook.body.data.id)).toBe(secret);
      const [legacyRow] = await db.select().from(companies).where(eq(companies.id, legacyCo.company.id));
      expect(decrypt(legacyRow.processorKeyEnc!)).toBe('sk_test_legacy');
      const [coRow] = await db.select().from(companies).where(eq(companies.id, co.company.id));
      expect(decrypt(coRow.processorKeyEnc!)).toBe('sk_test_rotation');
    });
    // Gone, as an operator would remove a key nobody can read.
    await db.update(companies).set({ processorKeyEnc: null }).where(eq(companies.id, stranger.company.id));
  });

  it.skipIf(process.env.TEST_DB !== 'postgres')('npm run secrets:rotate reports what it did and fails while values stay unreadable', async () => {
    const co = await newCompany(t, { processor_key: 'sk_test_command' });
    const run = (env: Record<string, string>) =>
      spawnSync(path.join(root, 'node_modules/.bin/tsx'), ['scripts/secrets-rotate.ts'], { cwd: root, encoding: 'utf8', env: { ...process.env, DATABASE_URL: t.url!, ...env }, timeout: 60_000 });
    const withoutPrevious = run({ APP_SECRET: NEW, APP_SECRET_PREVIOUS: '' });
    expect(withoutPrevious.status).toBe(1);
    expect(withoutPrevious.stderr).toMatch(/open with neither APP_SECRET nor APP_SECRET_PREVIOUS/);
    expect(withoutPrevious.stdout).toContain(`unreadable: ${co.company.id}`);
    const done = run({ APP_SECRET: NEW, APP_SECRET_PREVIOUS: OLD });
    expect(done.stderr).toBe('');
    expect(done.status).toBe(0);
    expect(done.stdout).toMatch(/companies\.processor_key_enc: [1-9]\d* sealed again/);
    expect(done.stdout).toContain('APP_SECRET_PREVIOUS can be removed');
    const [row] = await t.database.db.select().from(companies).where(eq(companies.id, co.company.id));
    expect(rotated(() => decrypt(row.processorKeyEnc!))).toBe('sk_test_command');
    const short = run({ APP_SECRET: 'short' });
    expect(short.status).toBe(1);
    expect(short.stderr).toContain('secrets:rotate: APP_SECRET must be at least 32 bytes');
  });
});
