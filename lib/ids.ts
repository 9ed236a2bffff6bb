import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lowercase

export type IdPrefix = 'c' | 'key' | 'u' | 'a' | 'p' | 'b' | 'tx' | 'ev' | 'ch' | 'w' | 'whd' | 'wha' | 'job' | 'cl';

let lastMs = 0;
let lastRandom: number[] = [];

/**
 * Prefixed, time-ordered ids (ULID layout: 10 chars of milliseconds, 16 of randomness,
 * incremented within one millisecond). Lists sort and page by id, newest first.
 */
export function newId(prefix: IdPrefix): string {
  const ms = Date.now();
  if (ms <= lastMs && lastRandom.length) {
    for (let i = lastRandom.length - 1; i >= 0; i--) {
      if (lastRandom[i] < 31) {
        lastRandom[i]++;
        break;
      }
      lastRandom[i] = 0;
    }
  } else {
    lastMs = ms;
    const bytes = randomBytes(16);
    lastRandom = Array.from(bytes, (b) => b & 31);
  }
  let time = '';
  let t = lastMs;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return `${prefix}_${time}${lastRandom.map((n) => ALPHABET[n]).join('')}`;
}

/** An unguessable secret: 32 random bytes, base64url. */
export function newSecret(prefix: string, bytes = 32): string {
  return prefix + randomBytes(bytes).toString('base64url');
}

