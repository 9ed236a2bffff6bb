import { performance } from 'node:perf_hooks';
import { and, asc, eq, inArray, lt, lte, notInArray, sql } from 'drizzle-orm';
import { Webhook as Signer } from 'standardwebhooks';
import { query, type Db } from '../../db/client';
import { balances, webhookAttempts, webhookDeliveries, webhooks } from '../../db/schema';
import { newId } from '../../ids';
import { now as clockNow, wallClock } from '../../clock';
import { ApiError, conflict, notFound } from '../../errors';
import { log } from '../../log';
import { stringifyJson, toUnits, unitsOut } from '../../money';
import { keysetPage, type PageQuery } from '../../db/keyset';
import { getWebhook, webhookPassword, webhookSecret, type Webhook } from './webhooks';
import { postWebhook, SEND_ERRORS, type SendError } from './send';
import { setting } from '../../env';
import { MAX_ATTEMPTS, MAX_DELIVERY_ATTEMPTS, RETRY_DELAYS_S } from './schedule';

export { MAX_ATTEMPTS, MAX_DELIVERY_ATTEMPTS, RETRY_DELAYS_S };

// A claimed delivery is `sending` with next_attempt_at as its lease: if the worker dies
// mid-send, another takes it over when the lease ends. Far longer than the send timeout.
const leaseMs = () => Math.max(60_000, sendTimeoutMs() + 30_000);
// Sends in flight per process, per company and per webhook within them. One company's receivers,
// however many and however slow, hold at most PER_COMPANY slots (each for up to the send
// timeout), so the others always have room. A webhook whose last send took at least half the
// timeout counts as slow: it gets PER_SLOW_WEBHOOK slot until a send is prompt again, and all
// slow webhooks together get at most SLOW_SLOTS, the rest staying free for prompt receivers.
const CONCURRENCY = 32;
const PER_COMPANY = 8;
const PER_WEBHOOK = 4;
const PER_SLOW_WEBHOOK = 1;
const SLOW_SLOTS = 16;
// How long a slow send marks its webhook slow, when no prompt send clears it sooner.
const SLOW_MEMORY_MS = 5 * 60_000;
// Candidate reads per claim: one company with many due deliveries fills its own slots from the
// first read, and the next read, without it, finds the other companies' deliveries.
const CLAIM_READS = 4;
// How often the background sender looks for newly due deliveries (a finished send looks at once),
// and how long a waiting run sleeps between looks while sends are in flight.
const POLL_MS = 250;
// After a failed attempt the background sender leaves the webhook alone this long: its other due
// deliveries are not all tried against a receiver that is down right now (retries are scheduled).
const FAILING_PAUSE_MS = 1_000;
const USER_AGENT = 'billing-webhooks/1 (Standard Webhooks)';

/** A receiver must answer 2xx within this (10 s; WEBHOOK_TIMEOUT_MS overrides it, e.g. in tests). */
export function sendTimeoutMs(): number {
  return setting('WEBHOOK_TIMEOUT_MS');
}

export type Delivery = typeof webhookDeliveries.$inferSelect;
/**
 * `sent`: the message the last logged attempt carried (a `balance_change`'s balance changes).
 * `delivered`: a replay of a delivery that had succeeded is under way; its failure leaves it
 * succeeded, even when another process finishes the replay after this one died.
 */
type Stored = { balance?: string; detail?: Record<string, unknown>; sent?: { id: string; balance: string | null; attempt: number }; delivered?: boolean };

const later = (a: Date, b: Date) => (a.getTime() >= b.getTime() ? a : b);
/**
 * The body a receiver gets, per registration style. Variant A (`type`): company_id,
 * callback_id (the delivery id: the `webhook-id` header, see messageId), account_id, type,
 * account_balance (number), account_denomination. Variant B (`topic`): webhook_id, topic,
 * account_id, denomination, balance (exact decimal string). Extra facts (the failed charge,
 * the threshold crossed, the plan refilled) ride under `data`.
 */
export function renderPayload(w: Pick<Webhook, 'id' | 'companyId' | 'style'>, d: Delivery, liveBalance?: string | null) {
  const stored = (d.payload ?? {}) as Stored;
  const balance = liveBalance ?? stored.balance ?? '0';
  const detail: { data?: Record<string, unknown> } = stored.detail && Object.keys(stored.detail).length ? { data: stored.detail } : {};
  // Every notification names its account and denomination (Notification in outbox.ts).
  const accountId = d.accountId as string;
  const denomination = d.denomination as string;
  if (w.style === 'type') {
    return {
      company_id: w.companyId,
      callback_id: d.id,
      account_id: accountId,
      type: d.topic,
      account_balance: unitsOut(balance),
      account_denomination: denomination,
      ...detail,
    };
  }
  return { webhook_id: w.id, topic: d.topic, account_id: accountId, denomination, balance: toUnits(balance), ...detail };
}

/**
 * `balance_change` carries the balance at send time. FOR SHARE waits for a transaction that is
 * still moving this balance (and may have coalesced into this delivery just before we
 * claimed it), so the value sent is never older than the last change notified. One row, one
 * statement: nothing else is held while it waits.
 */
async function liveBalance(db: Db, d: Delivery): Promise<string | null> {
  if (d.topic !== 'balance_change' || !d.accountId || !d.denomination) return null;
  const [row] = await query<{ amount: string }>(
    db,
    sql`select amount::text as amount from balances where account_id = ${d.accountId} and denomination = ${d.denomination} for share`,
  );
  return row ? row.amount : null;
}

/**
 * The attempt's `webhook-id`. Standard Webhooks keeps it the same on every attempt of one message,
 * so receivers deduplicate on it, and every delivery but a `balance_change` carries the same body
 * each time: its id is the delivery's. A `balance_change` carries the balance at send time, so a
 * retry can carry a newer balance than the attempt before it. That is a new message, and gets a
 * new id (the delivery's, `_r` and the attempt's number): a receiver that handled the earlier attempt
 * while we gave up on its answer would otherwise drop the newer balance as a duplicate. The same
 * when the attempt before was never logged (its process died): what it carried is not known.
 * An attempt that could not be prepared sent nothing; it carries the record of what went out
 * before it forward (`balance` null: nothing has gone out under that id yet), so the next
 * attempt keeps the message's id.
 */
export function messageId(d: Pick<Delivery, 'id' | 'attempts' | 'payload'>, balance: string | null): string {
  const sent = ((d.payload ?? {}) as Stored).sent;
  if (balance === null || (!sent && d.attempts <= 1)) return d.id;
  return sent && sent.attempt === d.attempts - 1 && (sent.balance === balance || sent.balance === null) ? sent.id : `${d.id}_r${d.attempts}`;
}

/** `prepared`: false when the attempt failed before sending (nothing went out). */
type Outcome = { status: number | null; error: SendError | null; durationMs: number; at: Date; balance: string | null; id: string | null; prepared: boolean };

/** One HTTP attempt. Never throws: every way it can go wrong becomes the attempt's outcome. */
async function attempt(db: Db, w: Webhook, d: Delivery): Promise<Outcome> {
  const at = clockNow();
  const started = performance.now();
  const timeoutMs = sendTimeoutMs();
  let balance: string | null = null;
  let id: string | null = null;
  try {
    balance = await liveBalance(db, d);
    id = messageId(d, balance);
    const body = stringifyJson(renderPayload(w, d, balance));
    // Wall-clock time even under the test clock, so receivers can check the signature with the
    // standard five-minute tolerance.
    const timestamp = wallClock();
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': new Signer(webhookSecret(w)).sign(id, timestamp, body),
    };
    if (w.username) headers.authorization = `Basic ${Buffer.from(`${w.username}:${webhookPassword(w) ?? ''}`).toString('base64')}`;
    const sent = await postWebhook(w.url, headers, body, timeoutMs);
    return { ...sent, durationMs: Math.round(performance.now() - started), at, balance, id, prepared: true };
  } catch (err) {
    // Reading the balance or signing failed: nothing went out, and the attempt is retried.
    log.error({ delivery_id: d.id, webhook_id: d.webhookId, err }, 'webhook delivery could not be prepared');
    return { status: null, error: 'connection_failed', durationMs: Math.round(performance.now() - started), at, balance: null, id: null, prepared: false };
  }
}

/**
 * Logs the attempt and moves the delivery on, in one statement: succeeded; or pending again at
 * the next step of the schedule; or failed when the schedule is used up. Guarded by the claim
 * (still `sending`, same attempt number), so a worker whose lease was taken over cannot undo
 * the newer outcome. A success also pulls the webhook's waiting retries forward, once each: a
 * receiver that was down for hours gets its backlog as soon as it answers again. A delivery
 * pulled forward once keeps its schedule after that: a receiver that answers some deliveries
 * and refuses others would otherwise have every refused one sent again after each success,
 * spending its attempts in seconds.
 */
async function recordOutcome(db: Db, d: Delivery, o: Outcome): Promise<boolean> {
  const ok = o.status !== null && o.status >= 200 && o.status < 300;
  const end = clockNow();
  const status = ok || (d.payload as Stored | null)?.delivered === true ? 'succeeded' : d.attempts >= MAX_ATTEMPTS ? 'failed' : 'pending';
  const next = status === 'pending' ? new Date(end.getTime() + RETRY_DELAYS_S[Math.max(0, d.attempts - 1)] * 1000) : null;
  const endIso = end.toISOString();
  const pullForward = ok
    ? sql`update webhook_deliveries set next_attempt_at = ${endIso}::timestamptz, updated_at = ${endIso}::timestamptz,
          payload = payload || '{"pulled": true}'::jsonb
        where webhook_id = ${d.webhookId} and status = 'pending' and next_attempt_at > ${endIso}::timestamptz
          and not coalesce((payload->>'pulled')::boolean, false)`
    : sql`select 1`;
  await query(
    db,
    sql`with logged as (
        insert into webhook_attempts (id, delivery_id, response_status, error, duration_ms, created_at)
        values (${newId('wha')}, ${d.id}, ${o.status}, ${o.error}, ${o.durationMs}, ${o.at.toISOString()}::timestamptz)
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
      ${pullForward}`,
  );
  return ok;
}

async function cancelOrphan(db: Db, d: Delivery): Promise<void> {
  const at = clockNow();
  await db
    .update(webhookDeliveries)
    .set({ status: 'cancelled', nextAttemptAt: null, updatedAt: at })
    .where(and(eq(webhookDeliveries.id, d.id), eq(webhookDeliveries.status, 'sending')));
}

const dueNow = (at: Date) =>
  and(inArray(webhookDeliveries.status, ['pending', 'sending']), lte(webhookDeliveries.nextAttemptAt, at));

/**
 * The sends of this process, shared by every caller: the background sender of the worker loop and
 * the runs that wait for their sends (the test clock, tests). `used` counts slots in flight or
 * reserved by a claim under way; `perWebhook`, `perCompany` and `slowUsed` the same per webhook,
 * per company and for slow webhooks, so concurrent claims never go over any limit. `slowUntil`
 * marks the webhooks whose last send was slow.
 */
type Pool = {
  used: number;
  perWebhook: Map<string, number>;
  perCompany: Map<string, number>;
  slowUsed: number;
  slowUntil: Map<string, number>;
  waiters: Set<() => void>;
  sender: { db: Db; timer: NodeJS.Timeout } | null;
  filling: boolean;
  again: boolean;
  pausedUntil: Map<string, number>;
};
const pool: Pool = ((globalThis as { __billingWebhookPool?: Pool }).__billingWebhookPool ??= {
  used: 0,
  perWebhook: new Map(),
  perCompany: new Map(),
  slowUsed: 0,
  slowUntil: new Map(),
  waiters: new Set(),
  sender: null,
  filling: false,
  again: false,
  pausedUntil: new Map(),
});

/** What one claimed send holds besides its process slot; given back as it was taken. */
type Slot = { webhookId: string; companyId: string; slow: boolean };

function bump(map: Map<string, number>, key: string, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n > 0) map.set(key, n);
  else map.delete(key);
}
function holdSlot(s: Slot): void {
  bump(pool.perWebhook, s.webhookId, 1);
  bump(pool.perCompany, s.companyId, 1);
  if (s.slow) pool.slowUsed++;
}
function releaseSlot(s: Slot): void {
  bump(pool.perWebhook, s.webhookId, -1);
  bump(pool.perCompany, s.companyId, -1);
  if (s.slow) pool.slowUsed--;
}

function isSlow(webhookId: string): boolean {
  const until = pool.slowUntil.get(webhookId);
  if (until === undefined) return false;
  if (until > performance.now()) return true;
  pool.slowUntil.delete(webhookId);
  return false;
}
/** A send that took half the timeout or more marks its webhook slow; a prompt one clears it. */
function noteDuration(webhookId: string, o: Outcome): void {
  if (o.error === 'timeout' || o.durationMs >= sendTimeoutMs() / 2) pool.slowUntil.set(webhookId, performance.now() + SLOW_MEMORY_MS);
  else if (o.status !== null) pool.slowUntil.delete(webhookId);
}
/** Whether one more send of this webhook (and company) fits, counting what this claim reserved. */
function fits(s: Slot): boolean {
  if ((pool.perCompany.get(s.companyId) ?? 0) >= PER_COMPANY) return false;
  if ((pool.perWebhook.get(s.webhookId) ?? 0) >= (s.slow ? PER_SLOW_WEBHOOK : PER_WEBHOOK)) return false;
  return !s.slow || pool.slowUsed < SLOW_SLOTS;
}

function notify(): void {
  for (const wake of [...pool.waiters]) wake();
}
/** Resolves when a send finishes, or after `ms`. */
function changed(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      pool.waiters.delete(wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    pool.waiters.add(wake);
  });
}

/**
 * Claims up to `limit` due deliveries within the per-company, per-webhook and slow limits, none
 * for the webhooks in `skip`. Candidates are read without locks, then taken with FOR UPDATE SKIP
 * LOCKED and re-checked, in the claiming UPDATE itself: any number of workers claim side by side,
 * and each delivery goes to one of them. Slots are reserved before the UPDATE and given back for
 * what it did not take.
 */
async function claim(db: Db, at: Date, limit: number, skip: string[]): Promise<{ rows: Delivery[]; slots: Map<string, Slot> }> {
  const picked = new Map<string, Slot>();
  const seen = new Set<string>();
  for (let read = 0; read < CLAIM_READS && picked.size < limit; read++) {
    const fullWebhooks = [...pool.perWebhook].filter(([id, n]) => n >= (isSlow(id) ? PER_SLOW_WEBHOOK : PER_WEBHOOK)).map(([id]) => id);
    const slowWebhooks = pool.slowUsed >= SLOW_SLOTS ? [...pool.slowUntil.keys()].filter(isSlow) : [];
    const excluded = [...new Set([...skip, ...fullWebhooks, ...slowWebhooks])];
    const fullCompanies = [...pool.perCompany].filter(([, n]) => n >= PER_COMPANY).map(([id]) => id);
    const candidates = await db
      .select({ id: webhookDeliveries.id, webhookId: webhookDeliveries.webhookId, companyId: webhookDeliveries.companyId })
      .from(webhookDeliveries)
      .where(
        and(
          dueNow(at),
          // The claim checks it again, under the lock: read here too, a delivery that must wait does not take a slot.
          noSiblingInFlight(at),
          excluded.length ? notInArray(webhookDeliveries.webhookId, excluded) : undefined,
          fullCompanies.length ? notInArray(webhookDeliveries.companyId, fullCompanies) : undefined,
          seen.size ? notInArray(webhookDeliveries.id, [...seen]) : undefined,
        ),
      )
      .orderBy(asc(webhookDeliveries.nextAttemptAt), asc(webhookDeliveries.id))
      .limit(limit * 4);
    if (!candidates.length) break;
    for (const c of candidates) {
      seen.add(c.id);
      if (picked.size >= limit) break;
      const slot: Slot = { webhookId: c.webhookId, companyId: c.companyId, slow: isSlow(c.webhookId) };
      if (!fits(slot)) continue;
      holdSlot(slot);
      picked.set(c.id, slot);
    }
    // A short read saw everything due: reading again finds nothing new.
    if (candidates.length < limit * 4) break;
  }
  if (!picked.size) return { rows: [], slots: picked };
  let rows: Delivery[] = [];
  try {
    const lockable = db
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(and(inArray(webhookDeliveries.id, [...picked.keys()]), dueNow(at), noSiblingInFlight(at)))
      .for('update', { skipLocked: true });
    rows = await db
      .update(webhookDeliveries)
      .set({ status: 'sending', attempts: sql`${webhookDeliveries.attempts} + 1`, nextAttemptAt: new Date(at.getTime() + leaseMs()), updatedAt: at })
      .where(inArray(webhookDeliveries.id, lockable))
      .returning();
  } finally {
    const taken = new Set(rows.map((r) => r.id));
    for (const [id, slot] of picked) if (!taken.has(id)) releaseSlot(slot);
  }
  return { rows, slots: picked };
}

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

async function webhooksById(db: Db, ids: string[]): Promise<Map<string, Webhook>> {
  if (!ids.length) return new Map();
  const rows = await db.select().from(webhooks).where(inArray(webhooks.id, [...new Set(ids)]));
  return new Map(rows.map((w) => [w.id, w]));
}

async function sendClaimed(db: Db, d: Delivery, w: Webhook | undefined): Promise<boolean> {
  if (!w) {
    await cancelOrphan(db, d);
    return true;
  }
  const outcome = await attempt(db, w, d);
  noteDuration(w.id, outcome);
  log.info({ delivery_id: d.id, webhook_id: w.id, company_id: w.companyId, topic: d.topic, attempt: d.attempts, outcome: outcome.error ?? outcome.status, duration_ms: outcome.durationMs }, 'webhook attempt');
  return recordOutcome(db, d, outcome);
}

/**
 * Claims what is due into the free slots and starts sending it; returns how many it claimed
 * without waiting for the sends. Claims commit before anything is sent, so no lock or
 * transaction is held across the network. Each finished send frees its slot and, while the
 * background sender runs, claims the next due delivery at once.
 */
async function fill(db: Db, at: Date, skip: string[], onFailed: (webhookId: string) => void, background = false): Promise<number> {
  const free = CONCURRENCY - pool.used;
  if (free <= 0) return 0;
  pool.used += free;
  let started = 0;
  try {
    const { rows: claimed, slots } = await claim(db, at, free, skip);
    let hooks: Map<string, Webhook>;
    try {
      hooks = await webhooksById(db, claimed.map((d) => d.webhookId));
      // The background sender was stopped meanwhile: what it claimed goes back unsent.
      if (background && !pool.sender && claimed.length) await unclaim(db, claimed.splice(0), slots);
    } catch (err) {
      for (const d of claimed) releaseSlot(slots.get(d.id)!);
      throw err;
    }
    for (const d of claimed) {
      started++;
      void sendClaimed(db, d, hooks.get(d.webhookId))
        .then((ok) => {
          if (!ok) onFailed(d.webhookId);
        })
        .catch((err) => log.error({ delivery_id: d.id, webhook_id: d.webhookId, err }, 'webhook delivery could not be recorded'))
        .finally(() => {
          releaseSlot(slots.get(d.id)!);
          pool.used--;
          notify();
          kick();
        });
    }
    return claimed.length;
  } finally {
    // No wake-up here: only a finished send frees what a waiting run waits for (waking runs on
    // every claim would let them claim in turn forever, as the embedded database never yields).
    pool.used -= free - started;
  }
}

/** Gives claimed deliveries back unsent: pending and due again, the claim not counted as an attempt. */
async function unclaim(db: Db, claimed: Delivery[], slots: Map<string, Slot>): Promise<void> {
  try {
    await db
      .update(webhookDeliveries)
      .set({
        // A replay of a delivered one given back unsent is delivered still.
        status: sql`case when ${webhookDeliveries.payload} ? 'delivered' then 'succeeded' else 'pending' end`,
        nextAttemptAt: sql`case when ${webhookDeliveries.payload} ? 'delivered' then null else ${clockNow().toISOString()}::timestamptz end`,
        payload: sql`${webhookDeliveries.payload} - 'delivered'`,
        attempts: sql`greatest(${webhookDeliveries.attempts} - 1, 0)`,
        updatedAt: clockNow(),
      })
      .where(and(inArray(webhookDeliveries.id, claimed.map((d) => d.id)), eq(webhookDeliveries.status, 'sending')));
  } finally {
    for (const d of claimed) releaseSlot(slots.get(d.id)!);
  }
}

const pauseFailing = (webhookId: string) => pool.pausedUntil.set(webhookId, performance.now() + FAILING_PAUSE_MS);
function pausedWebhooks(): string[] {
  const t = performance.now();
  for (const [id, until] of pool.pausedUntil) if (until <= t) pool.pausedUntil.delete(id);
  return [...pool.pausedUntil.keys()];
}

/** One claim round of the background sender at a time; a request meanwhile runs one more after it. */
function kick(): void {
  if (!pool.sender) return;
  if (pool.filling) {
    pool.again = true;
    return;
  }
  pool.filling = true;
  void (async () => {
    try {
      do {
        pool.again = false;
        if (!pool.sender) break;
        await fill(pool.sender.db, clockNow(), pausedWebhooks(), pauseFailing, true);
      } while (pool.again);
    } catch (err) {
      log.error({ err }, 'webhook delivery claim failed');
    } finally {
      pool.filling = false;
    }
  })();
}

/**
 * The worker task. In the worker loop (`background`), it starts this process's background
 * sender if needed, which claims due deliveries every POLL_MS and whenever a send finishes, and
 * returns after one claim without waiting for any send: a hanging receiver holds only its own
 * slots for its timeout, never the loop, so everyone else's deliveries go out within about a
 * second. Otherwise (the test clock, tests) it sends every due delivery and returns when none is
 * due or in flight; a webhook whose attempt failed then gets no further claims in this run (the
 * next run retries what is due). Either way a slow receiver never slows event ingestion, which
 * only writes outbox rows.
 */
export async function deliverDueWebhooks(db: Db, now: Date, opts: { background?: boolean } = {}): Promise<number> {
  if (opts.background) {
    if (!pool.sender) {
      const timer = setInterval(kick, POLL_MS);
      timer.unref?.();
      pool.sender = { db, timer };
    }
    pool.sender.db = db;
    return fill(db, later(now, clockNow()), pausedWebhooks(), pauseFailing, true);
  }
  const failing = new Set<string>();
  let handled = 0;
  for (;;) {
    const claimed = await fill(db, later(now, clockNow()), [...failing], (id) => failing.add(id));
    handled += claimed;
    if (claimed && pool.used < CONCURRENCY) continue;
    if (!pool.used) break;
    await changed(POLL_MS);
  }
  return handled;
}

/** Stops the background sender and returns once every send in flight is recorded. */
export async function stopDeliveries(): Promise<void> {
  if (pool.sender) clearInterval(pool.sender.timer);
  pool.sender = null;
  while (pool.used) await changed(POLL_MS);
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
  const slot: Slot = { webhookId: w.id, companyId: w.companyId, slow: isSlow(w.id) };
  if (!fits(slot)) {
    throw new ApiError('rate_limited', "This webhook's (or this company's) sends are at their limit right now; retry in a moment.", 'delivery_id', {}, { 'Retry-After': '1' });
  }
  holdSlot(slot);
  try {
    // Claimed only from the state just read: what the re-send's failure leaves depends on it.
    const [claimed] = await db
      .update(webhookDeliveries)
      .set({
        status: 'sending',
        attempts: sql`${webhookDeliveries.attempts} + 1`,
        nextAttemptAt: new Date(at.getTime() + leaseMs()),
        updatedAt: at,
        // Recorded with the claim: a process that takes the replay over after this one died knows it.
        ...(before.status === 'succeeded' && { payload: sql`coalesce(${webhookDeliveries.payload}, '{}'::jsonb) || '{"delivered": true}'::jsonb` }),
      })
      .where(
        and(
          mine,
          eq(webhookDeliveries.status, before.status),
          inArray(webhookDeliveries.status, ['pending', 'succeeded', 'failed']),
          // Re-sends at once: the cap holds however many race past the read above.
          lt(webhookDeliveries.attempts, MAX_DELIVERY_ATTEMPTS),
        ),
      )
      .returning();
    if (!claimed) {
      const current = await getDelivery({ db, companyId, webhookId, deliveryId });
      if (current.attempts >= MAX_DELIVERY_ATTEMPTS) throw attemptsUsedUp();
      throw conflict('This delivery is being sent right now; look at its attempts in a moment.', 'delivery_id');
    }
    await sendClaimed(db, claimed, w);
  } finally {
    releaseSlot(slot);
    notify();
  }
  return getDelivery({ db, companyId, webhookId, deliveryId });
}
