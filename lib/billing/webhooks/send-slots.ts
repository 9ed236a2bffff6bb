// Sends in flight per process, per company and per webhook within them. One company's receivers,
// however many and however slow, hold at most PER_COMPANY slots (each for up to the send
// timeout), so the others always have room. A webhook whose last send took at least half the
// timeout counts as slow: it gets PER_SLOW_WEBHOOK slot until a send is prompt again, and all
// slow webhooks together get at most SLOW_SLOTS, the rest staying free for prompt receivers.
export const CONCURRENCY = 32;
export const PER_COMPANY = 8;
export const PER_WEBHOOK = 4;
export const PER_SLOW_WEBHOOK = 1;
export const SLOW_SLOTS = 16;
// How long a slow send marks its webhook slow, when no prompt send clears it sooner.
export const SLOW_MEMORY_MS = 5 * 60_000;
// After a failed attempt the background sender leaves the webhook alone this long: its other due
// deliveries are not all tried against a receiver that is down right now (retries are scheduled).
export const FAILING_PAUSE_MS = 1_000;

/** What one claimed send holds besides its process slot; given back as it was taken. */
export type Slot = { webhookId: string; companyId: string; slow: boolean };

/** How a send went, as far as the slots care: its duration, and whether it got an answer or timed out. */
export type SendTiming = { durationMs: number; answered: boolean; timedOut: boolean };

function bump(map: Map<string, number>, key: string, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n > 0) map.set(key, n);
  else map.delete(key);
}

/**
 * The send slots of one process, with no I/O: `used` counts slots in flight or reserved by a
 * claim under way; `perWebhook`, `perCompany` and `slowUsed` the same per webhook, per company
 * and for slow webhooks, so concurrent claims never go over any limit. `slowUntil` marks the
 * webhooks whose last send was slow, `pausedUntil` those whose last attempt failed. `now` is a
 * monotonic clock in milliseconds (performance.now in the service; tests step their own).
 */
export class SendSlots {
  used = 0;
  slowUsed = 0;
  readonly perWebhook = new Map<string, number>();
  readonly perCompany = new Map<string, number>();
  private readonly slowUntil = new Map<string, number>();
  private readonly pausedUntil = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  hold(s: Slot): void {
    bump(this.perWebhook, s.webhookId, 1);
    bump(this.perCompany, s.companyId, 1);
    if (s.slow) this.slowUsed++;
  }

  release(s: Slot): void {
    bump(this.perWebhook, s.webhookId, -1);
    bump(this.perCompany, s.companyId, -1);
    if (s.slow) this.slowUsed--;
  }

  isSlow(webhookId: string): boolean {
    const until = this.slowUntil.get(webhookId);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.slowUntil.delete(webhookId);
    return false;
  }

  /** A send that took half the timeout or more marks its webhook slow; a prompt answer clears it. */
  noteDuration(webhookId: string, t: SendTiming, timeoutMs: number): void {
    if (t.timedOut || t.durationMs >= timeoutMs / 2) this.slowUntil.set(webhookId, this.now() + SLOW_MEMORY_MS);
    else if (t.answered) this.slowUntil.delete(webhookId);
  }

  /** The slot a send of this webhook would take now. */
  slotFor(webhookId: string, companyId: string): Slot {
    return { webhookId, companyId, slow: this.isSlow(webhookId) };
  }

  /** Whether one more send of this webhook (and company) fits, counting what is held or reserved. */
  fits(s: Slot): boolean {
    if ((this.perCompany.get(s.companyId) ?? 0) >= PER_COMPANY) return false;
    if ((this.perWebhook.get(s.webhookId) ?? 0) >= (s.slow ? PER_SLOW_WEBHOOK : PER_WEBHOOK)) return false;
    return !s.slow || this.slowUsed < SLOW_SLOTS;
  }

  /** Webhooks that can take no further send now: their own slots are full, or they are slow and the slow slots are. */
  fullWebhooks(): string[] {
    const full = [...this.perWebhook].filter(([id, n]) => n >= (this.isSlow(id) ? PER_SLOW_WEBHOOK : PER_WEBHOOK)).map(([id]) => id);
    const slow = this.slowUsed >= SLOW_SLOTS ? [...this.slowUntil.keys()].filter((id) => this.isSlow(id)) : [];
    return [...new Set([...full, ...slow])];
  }

  /** Companies whose slots are all taken. */
  fullCompanies(): string[] {
    return [...this.perCompany].filter(([, n]) => n >= PER_COMPANY).map(([id]) => id);
  }

  /** Leaves a webhook whose attempt failed alone for FAILING_PAUSE_MS. */
  pause(webhookId: string): void {
    this.pausedUntil.set(webhookId, this.now() + FAILING_PAUSE_MS);
  }

  /** Forgets every slot held, slow mark and pause: the slots of a new process. */
  clear(): void {
    this.used = 0;
    this.slowUsed = 0;
    for (const m of [this.perWebhook, this.perCompany, this.slowUntil, this.pausedUntil]) m.clear();
  }

  /** The webhooks paused right now. */
  paused(): string[] {
    const t = this.now();
    for (const [id, until] of this.pausedUntil) if (until <= t) this.pausedUntil.delete(id);
    return [...this.pausedUntil.keys()];
  }
}
