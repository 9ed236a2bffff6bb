import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { appSecret, previousAppSecret } from './secrets';
import { ApiError } from './errors';
import { testRunnerOnly } from './env';

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

/**
 * scrypt at N = 2^17, r = 8 (128 MiB, about half a second on one core), run on libuv's
 * threads so sign-ins never stall the event loop. The parameters are stored beside each hash
 * (`scrypt$n=131072,r=8,p=1$salt$hash`), so they can be raised later; hashes made before
 * that (`scrypt$salt$hash`) used Node's defaults.
 */
export const PASSWORD_PARAMS = { N: 2 ** 17, r: 8, p: 1 } as const;
const LEGACY_PARAMS = { N: 2 ** 14, r: 8, p: 1 } as const;
type ScryptParams = { N: number; r: number; p: number };

/**
 * What new hashes get: PASSWORD_PARAMS, unless a test process asked for less. No setting
 * reaches it: only setPasswordCostForTests, which refuses outside the test runner.
 */
let current: ScryptParams = PASSWORD_PARAMS;
/** The dummy hash of verifyPassword at `current`'s parameters, made when first needed. */
let dummy: string | null = null;

/**
 * For the test runner only (lib/testing/password-cost.ts): hash at `lower` instead of
 * PASSWORD_PARAMS in this process, so tests of sign-in rules do not spend their time in scrypt;
 * null puts PASSWORD_PARAMS back. Throws anywhere
 * but under vitest.
 */
export function setPasswordCostForTests(lower: ScryptParams | null): void {
  testRunnerOnly('setPasswordCostForTests');
  current = lower ?? PASSWORD_PARAMS;
  dummy = null;
}

/** The parameters new hashes get now (PASSWORD_PARAMS outside tests). */
export const passwordParams = (): ScryptParams => current;

// Each hash holds 128 MiB while it runs: more at once would only queue on libuv's threads
// (which DNS and file work share) and multiply the memory.
export const MAX_CONCURRENT_HASHES = 2;
/**
 * Hashes that may wait for a slot, about two seconds of work: past it a password check is
 * refused at once (503 with Retry-After) instead of queueing without end behind a flood of
 * sign-in attempts, which would hold every later sign-in, and its memory, for as long as the
 * flood lasts.
 */
export const MAX_WAITING_HASHES = 8;
let running = 0;
const waiting: (() => void)[] = [];
// How long a hash takes here (moving average), for the Retry-After of a refusal.
const FIRST_ESTIMATE_MS = 500;
let averageMs = FIRST_ESTIMATE_MS;

/** Tests only: the hashes still running or waiting for a slot. */
export function hashesUnderWay(): number {
  return running + waiting.length;
}

/** Tests only: the time a hash takes as a new process estimates it (Retry-After counts from it), and no dummy hash yet. */
export function resetHashingForTests(): void {
  testRunnerOnly('resetHashingForTests');
  averageMs = FIRST_ESTIMATE_MS;
  dummy = null;
}

/** Whether a password check asked now would be refused: every slot busy and the queue full. */
export function hashingSaturated(): boolean {
  return running >= MAX_CONCURRENT_HASHES && waiting.length >= MAX_WAITING_HASHES;
}

/** Seconds until the hashes queued now are done: when to try again. */
export function hashingRetryAfterS(): number {
  return Math.max(1, Math.ceil((averageMs * (waiting.length / MAX_CONCURRENT_HASHES + 1)) / 1000));
}

/** What a password check answers while the queue is full. */
export function hashingBusy(): ApiError {
  const retry = hashingRetryAfterS();
  return new ApiError('service_unavailable', `Too many passwords are being checked right now: try again in ${retry} second${retry === 1 ? '' : 's'}.`, null, {}, { 'Retry-After': String(retry) });
}

/** What every hash waits for once it has a slot (lib/testing/password-cost.ts): null outside tests. */
let gate: (() => Promise<void>) | null = null;

/**
 * For the test runner only: each password hash asked for calls `next` at once and, once it has a
 * slot, waits for the promise it returned before it runs, so a test holds the slots (and the
 * queue behind them) for as long as it needs, however fast a hash is. null lets hashes run.
 * Throws anywhere but under vitest.
 */
export function setHashGateForTests(next: (() => Promise<void>) | null): void {
  testRunnerOnly('setHashGateForTests');
  gate = next;
}

async function deriveKey(password: string, salt: Buffer, length: number, params: ScryptParams): Promise<Buffer> {
  const opened = gate?.();
  if (running >= MAX_CONCURRENT_HASHES) {
    if (waiting.length >= MAX_WAITING_HASHES) throw hashingBusy();
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
  running++;
  let started = performance.now();
  try {
    if (opened) {
      await opened;
      started = performance.now();
    }
    return await new Promise<Buffer>((resolve, reject) =>
      scrypt(password, salt, length, { ...params, maxmem: 256 * params.N * params.r }, (err, key) => (err ? reject(err) : resolve(key))),
    );
  } finally {
    averageMs = averageMs * 0.8 + (performance.now() - started) * 0.2;
    running--;
    waiting.shift()?.();
  }
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await deriveKey(password, salt, 32, current);
  const { N, r, p } = current;
  return `scrypt$n=${N},r=${r},p=${p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

type ParsedHash = { params: ScryptParams; salt: Buffer; hash: Buffer };

function parseHash(stored: string): ParsedHash | null {
  const parts = stored.split('$');
  if (parts[0] !== 'scrypt') return null;
  if (parts.length === 3 && parts[1] && parts[2]) return { params: LEGACY_PARAMS, salt: Buffer.from(parts[1], 'base64url'), hash: Buffer.from(parts[2], 'base64url') };
  if (parts.length !== 4) return null;
  const m = /^n=(\d+),r=(\d+),p=(\d+)$/.exec(parts[1]);
  if (!m || !parts[2] || !parts[3]) return null;
  return { params: { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) }, salt: Buffer.from(parts[2], 'base64url'), hash: Buffer.from(parts[3], 'base64url') };
}

/** Whether a stored hash was made with weaker parameters than new hashes get. */
export function needsRehash(stored: string): boolean {
  const parsed = parseHash(stored);
  return !parsed || parsed.params.N < current.N || parsed.params.r < current.r || parsed.params.p < current.p;
}

/**
 * A hash no password matches (its bytes are random, not derived), with today's parameters:
 * checking a password against it costs what checking a real one costs.
 */
const dummyHash = () => (dummy ??= `scrypt$n=${current.N},r=${current.r},p=${current.p}$${randomBytes(16).toString('base64url')}$${randomBytes(32).toString('base64url')}`);

/**
 * Checks a password against a stored hash, or against the dummy hash when there is none (an
 * unknown email), so both take the same time. A hash with weaker parameters also pays for a
 * dummy check at today's, so an old account does not answer faster than an unknown email.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parsed = parseHash(stored ?? dummyHash());
  if (!parsed) {
    await verifyPassword(password, null);
    return false;
  }
  const actual = await deriveKey(password, parsed.salt, parsed.hash.length, parsed.params);
  if (stored && needsRehash(stored)) await verifyPassword(password, null);
  return stored !== null && timingSafeEqual(parsed.hash, actual);
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
