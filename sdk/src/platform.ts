// What the SDK takes from its platform: fetch, WebCrypto, TextEncoder and base64. Browsers,
// Node 19+ and other runtimes have them global; Node 18 keeps WebCrypto in node:crypto.

/** The module name in a variable, so bundlers for browsers leave the Node fallback alone. */
const NODE_CRYPTO = 'node:crypto';

let webCrypto: Promise<Crypto> | undefined;

export function getWebCrypto(): Promise<Crypto> {
  webCrypto ??= globalThis.crypto?.subtle
    ? Promise.resolve(globalThis.crypto)
    : (import(/* @vite-ignore */ /* webpackIgnore: true */ NODE_CRYPTO) as Promise<{ webcrypto: Crypto }>).then((m) => m.webcrypto);
  return webCrypto;
}

/** A random idempotency key: a UUID v4. */
export async function newIdempotencyKey(): Promise<string> {
  const crypto = await getWebCrypto();
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

export const utf8 = (text: string): Uint8Array<ArrayBuffer> => new Uint8Array(new TextEncoder().encode(text));
