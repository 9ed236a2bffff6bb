import { WebhookVerificationError } from './errors.js';
import { fromBase64, getWebCrypto, utf8 } from './platform.js';
import type { components } from './schema.js';

/** What a delivery carries: variant A (webhooks registered by type) or B (by topic). */
export type WebhookPayload = components['schemas']['WebhookPayloadByType'] | components['schemas']['WebhookPayloadByTopic'];

/** Request headers as a Fetch `Headers`, or a plain object such as Node's `req.headers`. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export type VerifyWebhookOptions = {
  /** How far `webhook-timestamp` may be from now, either way, in seconds. Default 300. */
  toleranceSeconds?: number;
  /** The time to check the timestamp against (tests). Default: now. */
  now?: Date;
};

const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

function header(headers: WebhookHeaders, name: string): string | null {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value.join(' ') : (value ?? null);
}

/**
 * Checks a webhook delivery as the service signs it (Standard Webhooks): an HMAC-SHA256 with the
 * webhook's `whsec_` secret over `webhook-id.webhook-timestamp.body`, in `webhook-signature`
 * (`v1,<base64>`, space-separated when there are several), with a timestamp within the tolerance
 * (so a captured delivery cannot be replayed later). Pass the body exactly as received (the raw
 * text or bytes, not re-serialized JSON). Returns the parsed payload; throws
 * WebhookVerificationError otherwise. Deduplicate on `webhook-id`: it is the same on every
 * attempt that carries the same message (a `balance_change` retried with a newer balance gets a
 * new one).
 */
export async function verifyWebhook(body: string | Uint8Array, headers: WebhookHeaders, secret: string, options: VerifyWebhookOptions = {}): Promise<WebhookPayload> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature header.');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a number of seconds.');
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (Math.abs(now - Number(timestamp)) > tolerance) throw new WebhookVerificationError('webhook-timestamp is outside the tolerance: an old or replayed delivery, or a wrong clock.');

  const key = secretBytes(secret);
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const crypto = await getWebCrypto();
  const hmacKey = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const signed = utf8(`${id}.${timestamp}.${text}`);
  let valid = false;
  for (const candidate of signatures.split(' ')) {
    const [version, value] = candidate.split(',', 2);
    if (version !== 'v1' || !value) continue;
    let mac: Uint8Array<ArrayBuffer>;
    try {
      mac = fromBase64(value);
    } catch {
      continue;
    }
    // subtle.verify compares in constant time.
    if (await crypto.subtle.verify('HMAC', hmacKey, mac, signed)) {
      valid = true;
      break;
    }
  }
  if (!valid) throw new WebhookVerificationError('No webhook-signature matches: a wrong secret, or a body changed after signing.');
  try {
    return JSON.parse(text) as WebhookPayload;
  } catch {
    throw new WebhookVerificationError('The body is not JSON.');
  }
}

function secretBytes(secret: string): Uint8Array<ArrayBuffer> {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  try {
    const bytes = fromBase64(encoded);
    if (bytes.length > 0) return bytes;
  } catch {
    /* reported below */
  }
  throw new WebhookVerificationError('The secret is not a whsec_ signing secret (base64 after whsec_).');
}
