import fs from 'node:fs';
import path from 'node:path';
import { hkdfSync, randomBytes } from 'node:crypto';
import { dataDir, setting } from './env';

// The service's secrets: APP_SECRET (configured, or generated once for the embedded database),
// the one it replaces while keys are rotated, and the keys derived from it.

/** Secrets shorter than this are refused: the service derives its encryption and signing keys from it. */
export const MIN_SECRET_BYTES = 32;

let generatedSecret: string | undefined;

/**
 * APP_SECRET encrypts processor keys and webhook secrets and, through a derived key, signs
 * console sessions. With the embedded database a development secret is generated once into
 * DATA_DIR; on PostgreSQL it must be configured, since every process has to share it.
 */
export function appSecret(): string {
  // Its length is checked with the rest of the configuration (lib/env.ts).
  const configured = setting('APP_SECRET');
  if (configured) return configured;
  if (setting('DATABASE_URL')) {
    throw new Error('APP_SECRET must be set when running on PostgreSQL (DATABASE_URL): at least 32 random bytes, e.g. `openssl rand -base64 32`.');
  }
  if (generatedSecret) return generatedSecret;
  const file = path.join(dataDir(), 'app-secret');
  let secret: string;
  try {
    secret = fs.readFileSync(file, 'utf8').trim();
  } catch {
    fs.mkdirSync(dataDir(), { recursive: true });
    secret = randomBytes(32).toString('base64url');
    try {
      fs.writeFileSync(file, secret, { flag: 'wx', mode: 0o600 });
    } catch {
      secret = fs.readFileSync(file, 'utf8').trim();
    }
  }
  checkSecretLength(`APP_SECRET (generated into ${file})`, secret);
  return (generatedSecret = secret);
}

/**
 * The secret APP_SECRET replaced, while stored values are re-encrypted (`npm run
 * secrets:rotate`). Any length: it may be the short secret being retired.
 */
export function previousAppSecret(): string | null {
  return setting('APP_SECRET_PREVIOUS') ?? null;
}

function checkSecretLength(name: string, value: string): void {
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes < MIN_SECRET_BYTES) {
    throw new Error(`${name} must be at least ${MIN_SECRET_BYTES} bytes long (it has ${bytes}): use a random value, e.g. \`openssl rand -base64 32\`.`);
  }
}

const derived = new Map<string, string>();

/**
 * The key that signs console sessions: NEXTAUTH_SECRET when set, otherwise derived from
 * APP_SECRET under its own label, so a leaked session key reveals nothing about the key that
 * encrypts stored secrets.
 */
export function consoleSessionSecret(): string {
  const configured = setting('NEXTAUTH_SECRET');
  if (configured) return configured;
  const secret = appSecret();
  let key = derived.get(secret);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', secret, '', 'billing console sessions', 32)).toString('base64url');
    derived.set(secret, key);
  }
  return key;
}
