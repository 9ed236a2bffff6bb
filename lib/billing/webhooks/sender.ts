import { performance } from 'node:perf_hooks';
import { inArray } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { claimDeliveries, dueDeliveryCandidates, unclaimDeliveries, type Delivery } from '../../db/sql/deliveries';
import { webhooks } from '../../db/schema';
import { now as clockNow } from '../../clock';
import { log } from '../../log';
import { testRunnerOnly } from '../../env';
import type { Webhook } from './webhooks';
import { leaseUntil, sendClaimed } from './attempt';
import { CONCURRENCY, SendSlots, type Slot } from './send-slots';

// Candidate reads per claim: one company with many due deliveries fills its own slots from the
// first read, and the next read, without it, finds the other companies' deliveries.
const CLAIM_READS = 4;
// How often the background sender looks for newly due deliveries (a finished send looks at once),
// and how long a waiting run sleeps between looks while sends are in flight.
const POLL_MS = 250;

/**
 * The sends of this process, shared by every caller: the background sender of the worker loop,
 * the runs that wait for their sends (the test clock, tests) and re-sends asked for by the API.
 */
type Sender = {
  slots: SendSlots;
  waiters: Set<() => void>;
  background: { db: Db; timer: NodeJS.Timeout } | null;
  filling: boolean;
  again: boolean;
};
const state: Sender = ((globalThis as { __billingWebhookSender?: Sender }).__billingWebhookSender ??= {
  slots: new SendSlots(() => performance.now()),
  waiters: new Set(),
  background: null,
  filling: false,
  again: false,
});

/** This process's send slots. */
export const sendSlots = state.slots;

/** Wakes the runs waiting for a send to finish. */
export function notifySendFinished(): void {
  for (const wake of [...state.waiters]) wake();
}
/** Resolves when a send finishes, or after `ms`. */
function changed(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      state.waiters.delete(wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    state.waiters.add(wake);
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
  const slots = state.slots;
  const picked = new Map<string, Slot>();
  const seen = new Set<string>();
  for (let read = 0; read < CLAIM_READS && picked.size < limit; read++) {
    const candidates = await dueDeliveryCandidates(db, {
      at,
      excludedWebhooks: [...new Set([...skip, ...slots.fullWebhooks()])],
      excludedCompanies: slots.fullCompanies(),
      seen: [...seen],
      limit: limit * 4,
    });
    if (!candidates.length) break;
    for (const c of candidates) {
      seen.add(c.id);
      if (picked.size >= limit) break;
      const slot = slots.slotFor(c.webhookId, c.companyId);
      if (!slots.fits(slot)) continue;
      slots.hold(slot);
      picked.set(c.id, slot);
    }
    // A short read saw everything due: reading again finds nothing new.
    if (candidates.length < limit * 4) break;
  }
  if (!picked.size) return { rows: [], slots: picked };
  let rows: Delivery[] = [];
  try {
    rows = await claimDeliveries(db, [...picked.keys()], at, leaseUntil(at));
  } finally {
    const taken = new Set(rows.map((r) => r.id));
    for (const [id, slot] of picked) if (!taken.has(id)) slots.release(slot);
  }
  return { rows, slots: picked };
}

async function webhooksById(db: Db, ids: string[]): Promise<Map<string, Webhook>> {
  if (!ids.length) return new Map();
  const rows = await db.select().from(webhooks).where(inArray(webhooks.id, [...new Set(ids)]));
  return new Map(rows.map((w) => [w.id, w]));
}

/**
 * Claims what is due into the free slots and starts sending it; returns how many it claimed
 * without waiting for the sends. Claims commit before anything is sent, so no lock or
 * transaction is held across the network. Each finished send frees its slot and, while the
 * background sender runs, claims the next due delivery at once.
 */
async function fill(db: Db, at: Date, skip: string[], onFailed: (webhookId: string) => void, background = false): Promise<number> {
  const free = CONCURRENCY - state.slots.used;
  if (free <= 0) return 0;
  state.slots.used += free;
  let started = 0;
  try {
    const { rows: claimed, slots } = await claim(db, at, free, skip);
    let hooks: Map<string, Webhook>;
    try {
      hooks = await webhooksById(db, claimed.map((d) => d.webhookId));
      // The background sender was stopped meanwhile: what it claimed goes back unsent.
      if (background && !state.background && claimed.length) await unclaim(db, claimed.splice(0), slots);
    } catch (err) {
      for (const d of claimed) state.slots.release(slots.get(d.id)!);
      throw err;
    }
    for (const d of claimed) {
      started++;
      void sendClaimed(db, d, hooks.get(d.webhookId), state.slots)
        .then((ok) => {
          if (!ok) onFailed(d.webhookId);
        })
        .catch((err) => log.error({ delivery_id: d.id, webhook_id: d.webhookId, err }, 'webhook delivery could not be recorded'))
        .finally(() => {
          state.slots.release(slots.get(d.id)!);
          state.slots.used--;
          notifySendFinished();
          kick();
        });
    }
    return claimed.length;
  } finally {
    // No wake-up here: only a finished send frees what a waiting run waits for (waking runs on
    // every claim would let them claim in turn forever, as the embedded database never yields).
    state.slots.used -= free - started;
  }
}

/** Gives claimed deliveries back unsent: pending and due again, the claim not counted as an attempt. */
async function unclaim(db: Db, claimed: Delivery[], slots: Map<string, Slot>): Promise<void> {
  try {
    await unclaimDeliveries(db, claimed.map((d) => d.id), clockNow());
  } finally {
    for (const d of claimed) state.slots.release(slots.get(d.id)!);
  }
}

const pauseFailing = (webhookId: string) => state.slots.pause(webhookId);

/** One claim round of the background sender at a time; a request meanwhile runs one more after it. */
function kick(): void {
  if (!state.background) return;
  if (state.filling) {
    state.again = true;
    return;
  }
  state.filling = true;
  void (async () => {
    try {
      do {
        state.again = false;
        if (!state.background) break;
        await fill(state.background.db, clockNow(), state.slots.paused(), pauseFailing, true);
      } while (state.again);
    } catch (err) {
      log.error({ err }, 'webhook delivery claim failed');
    } finally {
      state.filling = false;
    }
  })();
}

const later = (a: Date, b: Date) => (a.getTime() >= b.getTime() ? a : b);

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
    if (!state.background) {
      const timer = setInterval(kick, POLL_MS);
      timer.unref?.();
      state.background = { db, timer };
    }
    state.background.db = db;
    return fill(db, later(now, clockNow()), state.slots.paused(), pauseFailing, true);
  }
  const failing = new Set<string>();
  let handled = 0;
  for (;;) {
    const claimed = await fill(db, later(now, clockNow()), [...failing], (id) => failing.add(id));
    handled += claimed;
    if (claimed && state.slots.used < CONCURRENCY) continue;
    if (!state.slots.used) break;
    await changed(POLL_MS);
  }
  return handled;
}

/** Stops the background sender and returns once every send in flight is recorded. */
export async function stopDeliveries(): Promise<void> {
  if (state.background) clearInterval(state.background.timer);
  state.background = null;
  while (state.slots.used) await changed(POLL_MS);
}

/** Tests only: what a test file left of the sender: the background sender's timer, sends still in flight. */
export function senderLeftRunning(): string | null {
  if (state.background) return 'the background webhook sender is still running (stopDeliveries not called)';
  if (state.slots.used) return `${state.slots.used} webhook send(s) still in flight`;
  return null;
}

/** Tests only: the sender of a new process: not running, no slot held, no webhook marked slow or paused. */
export function resetSenderForTests(): void {
  testRunnerOnly('resetSenderForTests');
  if (state.background) clearInterval(state.background.timer);
  state.background = null;
  state.slots.clear();
  state.waiters.clear();
  state.filling = false;
  state.again = false;
}
