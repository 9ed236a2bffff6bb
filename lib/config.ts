import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export function dataDir(): string {
  return process.env.DATA_DIR || '.data';
}

export function publicUrl(): string {
  return (process.env.PUBLIC_URL || `http://localhost:${process.env.PORT || 3000}`).replace(/\/$/, '');
}

let cachedSecret: string | undefined;

/**
 * APP_SECRET encrypts processor keys and signs console sessions. With the embedded database a
 * development secret is generated once into DATA_DIR; on PostgreSQL it must be configured,
 * since every process has to share it.
 */
export function appSecret(): string {
  if (cachedSecret) return cachedSecret;
  if (process.env.APP_SECRET) return (cachedSecret = process.env.APP_SECRET);
  if (process.env.DATABASE_URL) {
    throw new Error('APP_SECRET must be set when running on PostgreSQL (DATABASE_URL).');
  }
  const file = path.join(dataDir(), 'app-secret');
  try {
    cachedSecret = fs.readFileSync(file, 'utf8').trim();
  } catch {
    fs.mkdirSync(dataDir(), { recursive: true });
    const secret = randomBytes(32).toString('base64url');
    try {
      fs.writeFileSync(file, secret, { flag: 'wx', mode: 0o600 });
      cachedSecret = secret;
    } catch {
      cachedSecret = fs.readFileSync(file, 'utf8').trim();
    }
  }
  if (!process.env.NEXTAUTH_SECRET) process.env.NEXTAUTH_SECRET = cachedSecret;
  return cachedSecret;
}
