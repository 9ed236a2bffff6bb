import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { appSecret, previousAppSecret } from './config';

export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

type SealingKey = { id: string; key: Buffer; legacyKey: Buffer };
const sealingKeys = new Map<string, SealingKey>();

/**
 * The keys one secret gives: the AES key for sealed values, the id stored beside them (so a
 * value names the secret that sealed it), and the key of values sealed before ids existed.
 */
function sealingKey(secret: string): SealingKey {
  let k = sealingKeys.get(secret);
  if (!k) {
    k = {
      id: createHmac('sha256', secret).update('billing sealing key id').digest('base64url').slice(0, 8),
      key: Buffer.from(hkdfSync('sha256', secret, '', 'billing sealed values', 32)),
      legacyKey: createHash('sha256').update(`processor-keys:${secret}`).digest(),
    };
    sealingKeys.set(secret, k);
  }
  return k;
}

function currentKey(): SealingKey {
  return sealingKey(appSecret());
}

function knownKeys(): SealingKey[] {
  const previous = previousAppSecret();
  return previous ? [currentKey(), sealingKey(previous)] : [currentKey()];
}

/** AES-256-GCM; output is keyId.iv.tag.ciphertext (base64url parts). */
export function encrypt(plain: string): string {
  const { id, key } = currentKey();
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [id, ...[iv, cipher.getAuthTag(), data].map((b) => b.toString('base64url'))].join('.');
}

function open(key: Buffer, [iv, tag, data]: Buffer[]): string {
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
}

/**
 * Opens a value sealed under APP_SECRET or APP_SECRET_PREVIOUS. Values from before key ids
 * (iv.tag.ciphertext) carry no id: each key is tried, and GCM's tag tells the right one.
 */
export function decrypt(sealed: string): string {
  const parts = sealed.split('.');
  if (parts.length === 4) {
    const [id, ...rest] = parts;
    const k = knownKeys().find((x) => x.id === id);
    if (!k) throw new Error(`A stored value was sealed with key ${id}, which is neither APP_SECRET nor APP_SECRET_PREVIOUS.`);
    return open(k.key, rest.map((p) => Buffer.from(p, 'base64url')));
  }
  if (parts.length !== 3) throw new Error('A stored value is not a sealed value.');
  const buffers = parts.map((p) => Buffer.from(p, 'base64url'));
  let failure: unknown;
  for (const k of knownKeys()) {
    try {
      return open(k.legacyKey, buffers);
    } catch (err) {
      failure = err;
    }
  }
  throw failure;
}

/** Whether a sealed value should be sealed again under the current APP_SECRET. */
export function isSealedWithCurrentKey(sealed: string): boolean {
  const parts = sealed.split('.');
  return parts.length === 4 && parts[0] === currentKey().id;
}

export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32);
  return `scrypt$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

export function verifyPassword(password: string, stored: string): boolean {
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = scryptSync(password, Buffer.from(salt, 'base64url'), expected.length);
  return timingSafeEqual(expected, actual);
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
