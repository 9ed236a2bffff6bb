import { z } from 'zod';
import { listQuery } from '../pagination';
import { TOPICS } from '../../billing/webhooks/topics';
import { literalHostProblem } from '../../net/destinations';

export const MAX_URL_LENGTH = 2048;
const utf8 = new TextEncoder();

/**
 * Where we POST: http or https only, never credentials in the URL (they go in username/password),
 * and never a literal address inside the network (names are checked when a send connects).
 */
export const webhookUrl = z
  .string({ error: 'must be a string' })
  .trim()
  .min(1, 'must not be empty')
  // The limit is in bytes (the address is stored and indexed as written, and an index entry has a
  // byte limit); the character limit it implies is what the OpenAPI document shows as maxLength.
  .max(MAX_URL_LENGTH, `must be at most ${MAX_URL_LENGTH} bytes (UTF-8)`)
  .refine((v) => utf8.encode(v).length <= MAX_URL_LENGTH, `must be at most ${MAX_URL_LENGTH} bytes (UTF-8)`)
  .superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be an absolute http or https URL' });
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      ctx.addIssue({ code: 'custom', message: 'must use http or https' });
    } else if (url.username || url.password || /^[a-z]+:\/\/[^/?#]*@/i.test(value)) {
      ctx.addIssue({ code: 'custom', message: 'must not carry credentials; send them as username and password instead' });
    } else if (!url.hostname) {
      ctx.addIssue({ code: 'custom', message: 'must name a host' });
    } else {
      const problem = literalHostProblem(url);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }
  });

// Basic auth joins username and password with a colon, so a username cannot contain one.
const username = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .refine((v) => !v.includes(':') && !/[\r\n]/.test(v), 'must not contain a colon or a line break');
const password = z
  .string({ error: 'must be a string' })
  .max(255, 'must be at most 255 characters')
  .refine((v) => !/[\r\n]/.test(v), 'must not contain a line break');

export const topic = z.enum(TOPICS, { error: `must be one of ${TOPICS.join(', ')}` });

/** Variant B: POST /v1/companies/{company_id}/webhooks. */
export const webhookCreate = z
  .strictObject({ url: webhookUrl, username: username.nullable().optional(), password: password.nullable().optional() })
  .refine((v) => !(v.password && !v.username), { message: 'password needs a username', path: ['username'] });
export type WebhookCreate = z.infer<typeof webhookCreate>;

/** PATCH: any of url, username, password; null clears the credentials. */
export const webhookUpdate = z
  .strictObject({ url: webhookUrl.optional(), username: username.nullable().optional(), password: password.nullable().optional() })
  .refine((v) => Object.keys(v).length > 0, 'Send at least one of url, username, password.');
export type WebhookUpdate = z.infer<typeof webhookUpdate>;

/** Variant A: POST /v1/webhooks with an event type and a url. */
export const typeRegistration = z.strictObject({ type: topic, url: webhookUrl });
export type TypeRegistration = z.infer<typeof typeRegistration>;

export const deliveryListQuery = listQuery.extend({
  status: z.enum(['pending', 'sending', 'succeeded', 'failed'], { error: 'must be one of pending, sending, succeeded, failed' }).optional(),
});
export type DeliveryListQuery = z.infer<typeof deliveryListQuery>;
