import { randomBytes } from 'node:crypto';
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { isUniqueViolation, query, type Db } from '../../db/client';
import { webhookDeliveries, webhooks, webhookSubscriptions, type WebhookStyle } from '../../db/schema';
import { newId } from '../../ids';
import { now } from '../../clock';
import { decrypt, encrypt } from '../../crypto';
import { conflict, invalid, notFound } from '../../errors';
import { keysetPage, type PageQuery } from '../../db/keyset';
import { literalHostProblem } from '../../net/destinations';
import { TOPICS, type Topic } from './topics';

export type Webhook = typeof webhooks.$inferSelect;
export type Style = WebhookStyle;

/** Variant B registration; null or a missing username means no Basic credentials. */
export type WebhookInput = { url: string; username?: string | null; password?: string | null };
/** What PATCH changes; null clears the credentials. */
export type WebhookPatch = { url?: string; username?: string | null; password?: string | null };
/** Variant A: one event type at one url. */
export type TypeRegistration = { type: Topic; url: string };

/** Webhooks one company may have: each one takes send slots and a share of the sender's time. */
export const MAX_WEBHOOKS_PER_COMPANY = 20;

/** The schemas refuse these already; checked again here for callers that build input themselves. */
function requireAllowedUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid('url must be an absolute http or https URL.', 'url');
  }
  const problem = literalHostProblem(parsed);
  if (problem) throw invalid(`url ${problem}.`, 'url');
}

/**
 * Held until the transaction ends, so concurrent registrations for one company count the
 * webhooks one after another and never both take the last free place.
 */
async function lockCompanyWebhooks(tx: Db, companyId: string): Promise<void> {
  await query(tx, sql`select pg_advisory_xact_lock(hashtextextended(${`webhooks:${companyId}`}, 0))`);
}

async function requireRoomForWebhook(tx: Db, companyId: string): Promise<void> {
  const [row] = await query<{ n: number }>(tx, sql`select count(*)::int as n from webhooks where company_id = ${companyId}`);
  if (Number(row?.n ?? 0) >= MAX_WEBHOOKS_PER_COMPANY) {
    throw invalid(`A company can have at most ${MAX_WEBHOOKS_PER_COMPANY} webhooks; delete one before registering another.`);
  }
}

/**
 * A Standard Webhooks secret: `whsec_` + standard base64 of 32 random bytes, the form the
 * `standardwebhooks` package (and Svix-style verifiers) decode.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export function webhookSecret(w: Webhook): string {
  return decrypt(w.secretEnc);
}

export function webhookPassword(w: Webhook): string | null {
  return w.passwordEnc === null ? null : decrypt(w.passwordEnc);
}

export function isTopic(value: string): value is Topic {
  return (TOPICS as readonly string[]).includes(value);
}

function topicOrder(topics: Topic[]): Topic[] {
  return [...topics].sort((a, b) => TOPICS.indexOf(a) - TOPICS.indexOf(b));
}

/** The Webhook record. The signing secret is shown only by the call that created the webhook. */
export function serializeWebhook(w: Webhook, topics: Topic[], opts: { secret?: boolean } = {}) {
  return {
    id: w.id,
    company_id: w.companyId,
    url: w.url,
    username: w.username,
    password: webhookPassword(w),
    // 'topic': variant B payloads; 'type': variant A payloads (registered with POST /webhooks).
    style: w.style,
    topics: topicOrder(topics),
    created_at: w.createdAt.toISOString(),
    updated_at: w.updatedAt?.toISOString() ?? null,
    ...(opts.secret && { secret: webhookSecret(w) }),
  };
}

export type WebhookWithTopics = { webhook: Webhook; topics: Topic[]; created?: boolean };

async function topicsOf(db: Db, webhookIds: string[]): Promise<Map<string, Topic[]>> {
  const out = new Map<string, Topic[]>(webhookIds.map((id) => [id, []]));
  if (!webhookIds.length) return out;
  const rows = await db
    .select({ webhookId: webhookSubscriptions.webhookId, topic: webhookSubscriptions.topic })
    .from(webhookSubscriptions)
    .where(inArray(webhookSubscriptions.webhookId, webhookIds));
  for (const r of rows) out.get(r.webhookId)?.push(r.topic);
  return out;
}

/** Variant B: a webhook with optional Basic credentials, subscribed to topics separately. */
export async function createWebhook({ db, companyId, input }: { db: Db; companyId: string; input: WebhookInput }): Promise<WebhookWithTopics> {
  requireAllowedUrl(input.url);
  const at = now();
  return db.transaction(async (tx) => {
    await lockCompanyWebhooks(tx, companyId);
    await requireRoomForWebhook(tx, companyId);
    const [webhook] = await tx
      .insert(webhooks)
      .values({
        id: newId('w'),
        companyId,
        url: input.url,
        username: input.username ?? null,
        passwordEnc: input.username && input.password != null ? encrypt(input.password) : null,
        secretEnc: encrypt(newWebhookSecret()),
        style: 'topic',
        createdAt: at,
        updatedAt: at,
      })
      .returning();
    return { webhook, topics: [], created: true };
  });
}

/**
 * Variant A: `{type, url}`. All type registrations of one url share one webhook, so a receiver
 * verifies every type it gets at that url with one secret; registering a (url, type) pair again
 * changes nothing and returns the same webhook (with its secret, as the registration response).
 */
export async function registerByType({ db, companyId, input }: { db: Db; companyId: string; input: TypeRegistration }): Promise<WebhookWithTopics> {
  requireAllowedUrl(input.url);
  const at = now();
  return db.transaction(async (tx) => {
    await lockCompanyWebhooks(tx, companyId);
    const [existing] = await tx
      .select({ id: webhooks.id })
      .from(webhooks)
      .where(and(eq(webhooks.companyId, companyId), eq(webhooks.url, input.url), eq(webhooks.style, 'type')));
    if (!existing) await requireRoomForWebhook(tx, companyId);
    await tx
      .insert(webhooks)
      .values({ id: newId('w'), companyId, url: input.url, secretEnc: encrypt(newWebhookSecret()), style: 'type', createdAt: at, updatedAt: at })
      .onConflictDoNothing({ target: [webhooks.companyId, webhooks.url], where: sql`style = 'type'` });
    const [webhook] = await tx
      .select()
      .from(webhooks)
      .where(and(eq(webhooks.companyId, companyId), eq(webhooks.url, input.url), eq(webhooks.style, 'type')));
    await tx.insert(webhookSubscriptions).values({ webhookId: webhook.id, companyId, topic: input.type, createdAt: at }).onConflictDoNothing();
    const topics = (await topicsOf(tx, [webhook.id])).get(webhook.id) ?? [];
    return { webhook, topics, created: true };
  });
}

export async function getWebhook({ db, companyId, webhookId }: { db: Db; companyId: string; webhookId: string }): Promise<Webhook> {
  const [webhook] = await db.select().from(webhooks).where(and(eq(webhooks.id, webhookId), eq(webhooks.companyId, companyId)));
  if (!webhook) throw notFound('webhook', 'webhook_id');
  return webhook;
}

export async function getWebhookWithTopics(args: { db: Db; companyId: string; webhookId: string }): Promise<WebhookWithTopics> {
  const webhook = await getWebhook(args);
  return { webhook, topics: (await topicsOf(args.db, [webhook.id])).get(webhook.id) ?? [] };
}

export async function listWebhooks({ db, companyId, page }: { db: Db; companyId: string; page: PageQuery }) {
  const result = await keysetPage(db.select().from(webhooks).$dynamic(), webhooks.id, page, eq(webhooks.companyId, companyId));
  const topics = await topicsOf(db, result.items.map((w) => w.id));
  return { items: result.items.map((w) => ({ id: w.id, webhook: w, topics: topics.get(w.id) ?? [] })), hasMore: result.hasMore };
}

export async function updateWebhook({ db, companyId, webhookId, input }: { db: Db; companyId: string; webhookId: string; input: WebhookPatch }): Promise<WebhookWithTopics> {
  if (input.url !== undefined) requireAllowedUrl(input.url);
  const current = await getWebhook({ db, companyId, webhookId });
  const username = input.username !== undefined ? input.username : current.username;
  const clearing = input.username === null;
  const password = input.password !== undefined ? input.password : clearing ? null : webhookPassword(current);
  if (password != null && password !== '' && !username) throw invalid('username is required to send a password.', 'username');
  try {
    const [webhook] = await db
      .update(webhooks)
      .set({
        url: input.url ?? current.url,
        username: username ?? null,
        passwordEnc: username && password != null ? encrypt(password) : null,
        updatedAt: now(),
      })
      .where(and(eq(webhooks.id, webhookId), eq(webhooks.companyId, companyId)))
      .returning();
    if (!webhook) throw notFound('webhook', 'webhook_id');
    return { webhook, topics: (await topicsOf(db, [webhook.id])).get(webhook.id) ?? [] };
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict('Another type registration already uses this url; register the types on that webhook.', 'url');
    throw err;
  }
}

/** Deletes the webhook and its subscriptions; deliveries still waiting are cancelled, never sent. */
export async function deleteWebhook({ db, companyId, webhookId }: { db: Db; companyId: string; webhookId: string }): Promise<WebhookWithTopics> {
  const at = now();
  return db.transaction(async (tx) => {
    const found = await getWebhookWithTopics({ db: tx, companyId, webhookId });
    await tx
      .update(webhookDeliveries)
      .set({ status: 'cancelled', nextAttemptAt: null, updatedAt: at })
      .where(and(eq(webhookDeliveries.webhookId, webhookId), inArray(webhookDeliveries.status, ['pending', 'sending'])));
    await tx.delete(webhooks).where(and(eq(webhooks.id, webhookId), eq(webhooks.companyId, companyId)));
    return found;
  });
}

function topicParam(value: string): Topic {
  if (!isTopic(value)) throw invalid(`Unknown topic ${JSON.stringify(value)}; topics are ${TOPICS.join(', ')}.`, 'topic');
  return value;
}

/** Idempotent: subscribing twice leaves one subscription. */
export async function subscribe({ db, companyId, webhookId, topic }: { db: Db; companyId: string; webhookId: string; topic: string }) {
  const t = topicParam(topic);
  const webhook = await getWebhook({ db, companyId, webhookId });
  await db.insert(webhookSubscriptions).values({ webhookId: webhook.id, companyId, topic: t, createdAt: now() }).onConflictDoNothing();
  return { webhook_id: webhook.id, topic: t };
}

export async function unsubscribe({ db, companyId, webhookId, topic }: { db: Db; companyId: string; webhookId: string; topic: string }) {
  const t = topicParam(topic);
  const webhook = await getWebhook({ db, companyId, webhookId });
  const gone = await db
    .delete(webhookSubscriptions)
    .where(and(eq(webhookSubscriptions.webhookId, webhook.id), eq(webhookSubscriptions.topic, t)))
    .returning({ topic: webhookSubscriptions.topic });
  if (!gone.length) throw notFound('subscription', 'topic');
  return { webhook_id: webhook.id, topic: t, deleted: true };
}

export async function listSubscriptions({ db, companyId, webhookId }: { db: Db; companyId: string; webhookId: string }) {
  const webhook = await getWebhook({ db, companyId, webhookId });
  const rows = await db
    .select()
    .from(webhookSubscriptions)
    .where(eq(webhookSubscriptions.webhookId, webhook.id))
    .orderBy(asc(webhookSubscriptions.createdAt));
  const ordered = topicOrder(rows.map((r) => r.topic));
  return ordered.map((topic) => {
    const r = rows.find((x) => x.topic === topic)!;
    return { webhook_id: webhook.id, topic, created_at: r.createdAt.toISOString() };
  });
}
