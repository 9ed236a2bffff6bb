import { and, asc, eq, inArray } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { claimForResend, type Delivery } from '../../db/sql/deliveries';
import { balances, webhookAttempts, webhookDeliveries } from '../../db/schema';
import { now as clockNow } from '../../clock';
import { ApiError, conflict, notFound } from '../../errors';
import { keysetPage, type PageQuery } from '../../db/keyset';
import { getWebhook, type Webhook } from './webhooks';
import { SEND_ERRORS, type SendError } from './send';
import { renderPayload } from './payload';
import { leaseUntil, sendClaimed } from './attempt';
import { notifySendFinished, sendSlots } from './sender';
import { MAX_DELIVERY_ATTEMPTS } from './schedule';

// A webhook's deliveries as the API and the console show them, and the re-send they can ask for.

/**
 * An attempt's error as answers show it. Attempts logged before errors were coarse kept the raw
 * network error (and a redirect's Location): those show only their kind.
 */
export function coarseError(stored: string | null): SendError | null {
  if (stored === null || (SEND_ERRORS as readonly string[]).includes(stored)) return stored as SendError | null;
  if (/^redirect not followed/.test(stored)) return null;
  if (/^no answer within|TimeoutError|ETIMEDOUT|UND_ERR_.*TIMEOUT/.test(stored)) return 'timeout';
  if (/ENOTFOUND|EAI_AGAIN|getaddrinfo/.test(stored)) return 'dns_failed';
  if (/CERT|SSL|TLS|self[- ]signed/i.test(stored)) return 'tls_failed';
  return 'connection_failed';
}

export function serializeDelivery(w: Webhook, d: Delivery, attempts: (typeof webhookAttempts.$inferSelect)[], live: string | null = null) {
  return {
    id: d.id,
    webhook_id: d.webhookId,
    topic: d.topic,
    account_id: d.accountId,
    denomination: d.denomination,
    // Deliveries are cancelled only when their webhook is deleted (or gone): never one of `w`.
    status: d.status as Exclude<Delivery['status'], 'cancelled'>,
    attempts: d.attempts,
    next_attempt_at: d.nextAttemptAt?.toISOString() ?? null,
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt?.toISOString() ?? null,
    // What was sent last, or, while waiting, what would be sent now.
    payload: renderPayload(w, d, live),
    attempts_log: attempts.map(serializeAttempt),
  };
}

export function serializeAttempt(a: typeof webhookAttempts.$inferSelect) {
  return {
    id: a.id,
    response_status: a.responseStatus,
    error: coarseError(a.error),
    duration_ms: a.durationMs,
    created_at: a.createdAt.toISOString(),
  };
}

export type DeliveryView = ReturnType<typeof serializeDelivery>;

/** A webhook's deliveries, with the balance a waiting `balance_change` would carry now. */
function deliveryRows(db: Db) {
  return db
    .select({ d: webhookDeliveries, live: balances.amount })
    .from(webhookDeliveries)
    .leftJoin(
      balances,
      and(
        eq(webhookDeliveries.topic, 'balance_change'),
        inArray(webhookDeliveries.status, ['pending', 'sending']),
        eq(balances.accountId, webhookDeliveries.accountId),
        eq(balances.denomination, webhookDeliveries.denomination),
      ),
    )
    .$dynamic();
}

/** Each delivery with its attempts, oldest first. */
async function withAttempts(db: Db, w: Webhook, rows: { d: Delivery; live: string | null }[]) {
  const ids = rows.map((r) => r.d.id);
  const logs = ids.length
    ? await db.select().from(webhookAttempts).where(inArray(webhookAttempts.deliveryId, ids)).orderBy(asc(webhookAttempts.createdAt), asc(webhookAttempts.id))
    : [];
  return rows.map((r) => ({ id: r.d.id, view: serializeDelivery(w, r.d, logs.filter((a) => a.deliveryId === r.d.id), r.live) }));
}

/** A webhook's deliveries, newest first, each with its attempts oldest first. */
export async function listDeliveries({ db, companyId, webhookId, page }: { db: Db; companyId: string; webhookId: string; page: PageQuery & { status?: 'pending' | 'sending' | 'succeeded' | 'failed' } }) {
  const w = await getWebhook({ db, companyId, webhookId });
  const rows = await keysetPage(
    deliveryRows(db),
    webhookDeliveries.id,
    page,
    eq(webhookDeliveries.webhookId, w.id),
    eq(webhookDeliveries.companyId, w.companyId),
    page.status ? eq(webhookDeliveries.status, page.status) : undefined,
  );
  return { items: await withAttempts(db, w, rows.items), hasMore: rows.hasMore };
}

/** The delivery a `webhook-id` names: the id itself, or messageId's `<delivery id>_r<attempt>`. */
export function deliveryIdOf(id: string): string {
  return id.replace(/^(whd_[0-9a-z]{26}(?:_[0-9a-f]{8})?)_r\d+$/, '$1');
}

export async function getDelivery({ db, companyId, webhookId, deliveryId: asked }: { db: Db; companyId: string; webhookId: string; deliveryId: string }): Promise<DeliveryView> {
  const deliveryId = deliveryIdOf(asked);
  const w = await getWebhook({ db, companyId, webhookId });
  const found = await deliveryRows(db).where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.webhookId, w.id), eq(webhookDeliveries.companyId, w.companyId)));
  const [row] = await withAttempts(db, w, found);
  if (!row) throw notFound('delivery', 'delivery_id');
  return row.view;
}

/** A delivery's attempts, newest first, a page at a time. */
export async function listAttempts({ db, companyId, webhookId, deliveryId: asked, page }: { db: Db; companyId: string; webhookId: string; deliveryId: string; page: PageQuery }) {
  const deliveryId = deliveryIdOf(asked);
  const w = await getWebhook({ db, companyId, webhookId });
  const [d] = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.webhookId, w.id), eq(webhookDeliveries.companyId, w.companyId)));
  if (!d) throw notFound('delivery', 'delivery_id');
  const rows = await keysetPage(db.select().from(webhookAttempts).$dynamic(), webhookAttempts.id, page, eq(webhookAttempts.deliveryId, d.id));
  return { items: rows.items.map((a) => ({ id: a.id, view: serializeAttempt(a) })), hasMore: rows.hasMore };
}

const attemptsUsedUp = () =>
  conflict(
    `This delivery has had ${MAX_DELIVERY_ATTEMPTS} attempts, the most one delivery gets; it is not sent again. Fix the receiver, and what comes next is delivered.`,
    'delivery_id',
  );

/**
 * Re-sends a delivery now, whatever its state (a replay of a succeeded one included), and
 * returns it with the new attempt logged. A failed re-send of a delivery with retries left
 * goes back on the schedule, one of a delivery that had succeeded stays succeeded (it was
 * delivered); one in flight right now is 409, and so is one that has had MAX_DELIVERY_ATTEMPTS. It takes a send slot as background sends do: while the
 * webhook or its company has none free, 429 with Retry-After.
 */
export async function retryDelivery({ db, companyId, webhookId, deliveryId: asked }: { db: Db; companyId: string; webhookId: string; deliveryId: string }): Promise<DeliveryView> {
  const deliveryId = deliveryIdOf(asked);
  const w = await getWebhook({ db, companyId, webhookId });
  const at = clockNow();
  const mine = and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.webhookId, w.id), eq(webhookDeliveries.companyId, companyId));
  const [before] = await db.select({ status: webhookDeliveries.status, attempts: webhookDeliveries.attempts }).from(webhookDeliveries).where(mine);
  // None of this webhook's: 404.
  if (!before) return getDelivery({ db, companyId, webhookId, deliveryId });
  if (before.attempts >= MAX_DELIVERY_ATTEMPTS) throw attemptsUsedUp();
  // Within the same limits as the background sends: re-sends fired at once, however many, hold
  // at most the company's and the webhook's share of this process's slots.
  const slot = sendSlots.slotFor(w.id, w.companyId);
  if (!sendSlots.fits(slot)) {
    throw new ApiError('rate_limited', "This webhook's (or this company's) sends are at their limit right now; retry in a moment.", 'delivery_id', {}, { 'Retry-After': '1' });
  }
  sendSlots.hold(slot);
  try {
    // Claimed only from the state just read: what the re-send's failure leaves depends on it.
    // Re-sends at once: the cap holds however many race past the read above.
    const claimed = await claimForResend(db, { id: deliveryId, webhookId: w.id, companyId, status: before.status, at, leaseUntil: leaseUntil(at), maxAttempts: MAX_DELIVERY_ATTEMPTS });
    if (!claimed) {
      const current = await getDelivery({ db, companyId, webhookId, deliveryId });
      if (current.attempts >= MAX_DELIVERY_ATTEMPTS) throw attemptsUsedUp();
      throw conflict('This delivery is being sent right now; look at its attempts in a moment.', 'delivery_id');
    }
    await sendClaimed(db, claimed, w, sendSlots);
  } finally {
    sendSlots.release(slot);
    notifySendFinished();
  }
  return getDelivery({ db, companyId, webhookId, deliveryId });
}
