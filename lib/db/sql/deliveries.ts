import { and, asc, eq, inArray, lt, lte, notInArray, sql } from 'drizzle-orm';
import { query, type Db } from '../client';
import { webhookDeliveries } from '../schema';

// The statements of a webhook delivery's life: claimed by one sender (FOR UPDATE SKIP LOCKED, the
// claim a lease in next_attempt_at), its attempt logged and the delivery moved on in one
// statement guarded by the claim, or given back unsent. Any number of processes claim side by side.

export type Delivery = typeof webhookDeliveries.$inferSelect;

const dueNow = (at: Date) => and(inArray(webhookDeliveries.status, ['pending', 'sending']), lte(webhookDeliveries.nextAttemptAt, at));

/**
 * A balance_change waits while another of its key (webhook, account, denomination) is being sent
 * under a live lease, or an older one of its key is due as well: it reads the balance when it is
 * sent, so sent after that one it carries the newer balance last. Two sent side by side could
 * arrive the other way round, and a receiver that keeps the latest message would keep the older
 * balance.
 */
function noSiblingInFlight(at: Date) {
  // webhook_deliveries is the claimed row here, o its sibling. Of two due at once (a receiver back
  // from an outage pulls its retries forward; a send whose worker died is due again once its
  // lease ends), only the older is claimed: one claim would take both.
  const t = sql`${at.toISOString()}::timestamptz`;
  return sql`(webhook_deliveries.coalesce_key is null or (
    not exists (select 1 from webhook_deliveries o
      where o.coalesce_key = webhook_deliveries.coalesce_key and o.status = 'sending' and o.next_attempt_at > ${t} and o.id <> webhook_deliveries.id)
    and not exists (select 1 from webhook_deliveries o
      where o.coalesce_key = webhook_deliveries.coalesce_key and o.status in ('pending', 'sending') and o.next_attempt_at <= ${t} and o.id < webhook_deliveries.id)))`;
}

/**
 * Due deliveries that may be claimed now, oldest first, read without locks: none of the webhooks
 * and companies excluded, none already `seen`. The claim checks them again under the lock.
 */
export async function dueDeliveryCandidates(
  db: Db,
  { at, excludedWebhooks, excludedCompanies, seen, limit }: { at: Date; excludedWebhooks: string[]; excludedCompanies: string[]; seen: string[]; limit: number },
): Promise<{ id: string; webhookId: string; companyId: string }[]> {
  return db
    .select({ id: webhookDeliveries.id, webhookId: webhookDeliveries.webhookId, companyId: webhookDeliveries.companyId })
    .from(webhookDeliveries)
    .where(
      and(
        dueNow(at),
        // The claim checks it again, under the lock: read here too, a delivery that must wait does not take a slot.
        noSiblingInFlight(at),
        excludedWebhooks.length ? notInArray(webhookDeliveries.webhookId, excludedWebhooks) : undefined,
        excludedCompanies.length ? notInArray(webhookDeliveries.companyId, excludedCompanies) : undefined,
        seen.length ? notInArray(webhookDeliveries.id, seen) : undefined,
      ),
    )
    .orderBy(asc(webhookDeliveries.nextAttemptAt), asc(webhookDeliveries.id))
    .limit(limit);
}

/**
 * Takes the picked deliveries that are still due and free with FOR UPDATE SKIP LOCKED, in the
 * claiming UPDATE itself: `sending`, one more attempt, leased until `leaseUntil`. Returns what it took.
 */
export async function claimDeliveries(db: Db, ids: string[], at: Date, leaseUntil: Date): Promise<Delivery[]> {
  const lockable = db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(and(inArray(webhookDeliveries.id, ids), dueNow(at), noSiblingInFlight(at)))
    .for('update', { skipLocked: true });
  return db
    .update(webhookDeliveries)
    .set({ status: 'sending', attempts: sql`${webhookDeliveries.attempts} + 1`, nextAttemptAt: leaseUntil, updatedAt: at })
    .where(inArray(webhookDeliveries.id, lockable))
    .returning();
}

/**
 * Claims one delivery for a re-send, from the state just read (`status`), under the attempt cap
 * however many re-sends race. A replay of a succeeded one records that with the claim, so a process
 * that takes the replay over after this one died knows it. Null: it was not in that state any more.
 */
export async function claimForResend(
  db: Db,
  { id, webhookId, companyId, status, at, leaseUntil, maxAttempts }: { id: string; webhookId: string; companyId: string; status: Delivery['status']; at: Date; leaseUntil: Date; maxAttempts: number },
): Promise<Delivery | null> {
  const [claimed] = await db
    .update(webhookDeliveries)
    .set({
      status: 'sending',
      attempts: sql`${webhookDeliveries.attempts} + 1`,
      nextAttemptAt: leaseUntil,
      updatedAt: at,
      ...(status === 'succeeded' && { payload: sql`coalesce(${webhookDeliveries.payload}, '{}'::jsonb) || '{"delivered": true}'::jsonb` }),
    })
    .where(
      and(
        eq(webhookDeliveries.id, id),
        eq(webhookDeliveries.webhookId, webhookId),
        eq(webhookDeliveries.companyId, companyId),
        eq(webhookDeliveries.status, status),
        inArray(webhookDeliveries.status, ['pending', 'succeeded', 'failed']),
        lt(webhookDeliveries.attempts, maxAttempts),
      ),
    )
    .returning();
  return claimed ?? null;
}

/** Gives claimed deliveries back unsent: pending and due again, the claim not counted as an attempt. */
export async function unclaimDeliveries(db: Db, ids: string[], at: Date): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({
      // A replay of a delivered one given back unsent is delivered still.
      status: sql`case when ${webhookDeliveries.payload} ? 'delivered' then 'succeeded' else 'pending' end`,
      nextAttemptAt: sql`case when ${webhookDeliveries.payload} ? 'delivered' then null else ${at.toISOString()}::timestamptz end`,
      payload: sql`${webhookDeliveries.payload} - 'delivered'`,
      attempts: sql`greatest(${webhookDeliveries.attempts} - 1, 0)`,
      updatedAt: at,
    })
    .where(and(inArray(webhookDeliveries.id, ids), eq(webhookDeliveries.status, 'sending')));
}

/** A claimed delivery whose webhook is gone: cancelled. */
export async function cancelDelivery(db: Db, id: string, at: Date): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({ status: 'cancelled', nextAttemptAt: null, updatedAt: at })
    .where(and(eq(webhookDeliveries.id, id), eq(webhookDeliveries.status, 'sending')));
}

/**
 * The balance a `balance_change` carries at send time. FOR SHARE waits for a transaction that is
 * still moving this balance (and may have coalesced into this delivery just before we claimed
 * it), so the value sent is never older than the last change notified. One row, one statement:
 * nothing else is held while it waits.
 */
export async function balanceForSend(db: Db, accountId: string, denomination: string): Promise<string | null> {
  const [row] = await query<{ amount: string }>(
    db,
    sql`select amount::text as amount from balances where account_id = ${accountId} and denomination = ${denomination} for share`,
  );
  return row ? row.amount : null;
}

/** One attempt as logged: its answer, and what it sent (`balance` and `id` null when nothing went out). */
export type LoggedAttempt = {
  status: number | null;
  error: string | null;
  durationMs: number;
  at: Date;
  balance: string | null;
  id: string | null;
  /** false when the attempt failed before sending. */
  prepared: boolean;
};

/**
 * Logs the attempt and moves the delivery on, in one statement: to `status` (`next` its next
 * attempt when pending). Guarded by the claim (still `sending`, same attempt number), so a worker
 * whose lease was taken over cannot undo the newer outcome. A success (`pullForward`) also pulls
 * the webhook's waiting retries forward, once each: a receiver that was down for hours gets its
 * backlog as soon as it answers again. A delivery pulled forward once keeps its schedule after
 * that: a receiver that answers some deliveries and refuses others would otherwise have every
 * refused one sent again after each success, spending its attempts in seconds.
 */
export async function recordAttempt(
  db: Db,
  d: Pick<Delivery, 'id' | 'webhookId' | 'attempts'>,
  o: LoggedAttempt,
  { attemptId, status, next, end, pullForward }: { attemptId: string; status: Delivery['status']; next: Date | null; end: Date; pullForward: boolean },
): Promise<void> {
  const endIso = end.toISOString();
  const pulled = pullForward
    ? sql`update webhook_deliveries set next_attempt_at = ${endIso}::timestamptz, updated_at = ${endIso}::timestamptz,
          payload = payload || '{"pulled": true}'::jsonb
        where webhook_id = ${d.webhookId} and status = 'pending' and next_attempt_at > ${endIso}::timestamptz
          and not coalesce((payload->>'pulled')::boolean, false)`
    : sql`select 1`;
  await query(
    db,
    sql`with logged as (
        insert into webhook_attempts (id, delivery_id, response_status, error, duration_ms, created_at)
        values (${attemptId}, ${d.id}, ${o.status}, ${o.error}, ${o.durationMs}, ${o.at.toISOString()}::timestamptz)
      ), moved as (
        update webhook_deliveries set status = ${status}, next_attempt_at = ${next ? next.toISOString() : null}::timestamptz,
          updated_at = ${endIso}::timestamptz,
          payload = (case when ${o.balance}::text is not null
              then payload || jsonb_build_object('balance', ${o.balance}::text, 'sent', jsonb_build_object('id', ${o.id}::text, 'balance', ${o.balance}::text, 'attempt', ${d.attempts}::int))
            -- Nothing went out: what went out before (or that nothing has) holds for this attempt too.
            when ${o.prepared}::boolean then payload
            when payload->'sent' is not null and (payload->'sent'->>'attempt')::int = ${d.attempts - 1}
              then jsonb_set(payload, '{sent,attempt}', to_jsonb(${d.attempts}::int))
            when payload->'sent' is null and ${d.attempts}::int = 1 and topic = 'balance_change'
              then payload || jsonb_build_object('sent', jsonb_build_object('id', id, 'balance', null, 'attempt', 1))
            else payload end) - 'delivered'
        where id = ${d.id} and status = 'sending' and attempts = ${d.attempts}
      )
      ${pulled}`,
  );
}

/** When the next delivery (or lease) falls due after `after`, so the test clock steps through retries in order. */
export async function nextWebhookDue(db: Db, after: Date): Promise<Date | null> {
  const [row] = await query<{ at: string | Date | null }>(
    db,
    sql`select min(next_attempt_at) as at from webhook_deliveries
      where status in ('pending', 'sending') and next_attempt_at > ${after.toISOString()}::timestamptz`,
  );
  return row?.at ? new Date(row.at) : null;
}
