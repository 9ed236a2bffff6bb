import { invalid, notFound, type ApiError } from '../../errors';
import { cmp, Decimal, roundCents, sub, toUnits, type Units } from '../../money';
import type { Balance } from '../balances/balances';
import { effectsOf, type Charge } from '../charges/charges';
import type { Effect } from '../settlement';
import { computeRefillSchedule } from './schedule';

/** A refill setting, as the API's body parses into it. */
export type RefillConfig = { amount: string; usd_charge: number; refill_period?: 'monthly'; threshold?: string; expires_after_days?: number; max_charges_per_month?: number };

/** The balance columns a refill setting writes (a charge carries them as JSON until it is paid). */
export type RefillColumns = {
  refillAmount: string;
  refillUsdAmount: number;
  refillThreshold?: string | null;
  refillOnDay: string | null;
  nextPeriodicRefill: Date | null;
  scheduledRefill: null;
  refillExpiresAfterDays?: number | null;
  refillMaxChargesPerMonth?: number | null;
};

/** The balance columns of a balance without refills. */
export const REFILLS_OFF = { refillThreshold: null, refillAmount: null, refillUsdAmount: null, refillOnDay: null, nextPeriodicRefill: null, scheduledRefill: null, refillExpiresAfterDays: null, refillMaxChargesPerMonth: null } as const;

/**
 * The balance columns for a refill setting. A PUT replaces the whole setting (amount and charge
 * are shared by both kinds): a threshold-only PUT ends a monthly schedule, a monthly-only PUT
 * ends a threshold. `keepThreshold` is for the mid-month change, which only alters the monthly
 * part. A monthly refill set at `now` is next due by the day-of-month rule (`computeRefillSchedule`).
 */
export function refillColumns(c: RefillConfig, now: Date, opts: { keepThreshold?: boolean } = {}): RefillColumns {
  const threshold = c.threshold !== undefined ? { refillThreshold: c.threshold } : opts.keepThreshold ? {} : { refillThreshold: null };
  const schedule = c.refill_period === 'monthly' ? computeRefillSchedule(now) : null;
  return {
    refillAmount: c.amount,
    refillUsdAmount: c.usd_charge,
    ...threshold,
    refillOnDay: schedule ? String(schedule.refillOnDay) : null,
    nextPeriodicRefill: schedule ? schedule.next : null,
    scheduledRefill: null,
    // The mid-month change alters amount and charge only: the refills' expiry stays as set.
    ...(opts.keepThreshold ? {} : { refillExpiresAfterDays: c.expires_after_days ?? null, refillMaxChargesPerMonth: c.threshold !== undefined ? (c.max_charges_per_month ?? null) : null }),
  };
}

/**
 * What PUT .../balance/{denomination}/auto_refill does. A monthly refill charges its first
 * refill at once and its settings are stored with the units, only when that charge is paid; a
 * threshold refill is stored at once and charges nothing now.
 */
export type RefillSettingDecision =
  | { kind: 'start_monthly'; columns: RefillColumns; amount: Units; charge: number; description: string }
  | { kind: 'set_threshold'; columns: RefillColumns }
  | { kind: 'unchanged' };

/**
 * A monthly setting equal to the one in effect (amount, charge and threshold; no change
 * scheduled) is `unchanged`: a PUT that repeats it neither charges nor moves the refill day, so a
 * backend that re-applies its settings does not buy a refill each time.
 */
export function decideRefillSetting({
  at,
  denomination,
  config,
  balance,
  lastRefillFailed = false,
}: {
  at: Date;
  denomination: string;
  config: RefillConfig;
  balance?: Pick<Balance, 'refillAmount' | 'refillUsdAmount' | 'refillThreshold' | 'nextPeriodicRefill' | 'scheduledRefill'> & { refillMaxChargesPerMonth?: number | null };
  /** The balance's last monthly refill charge failed: setting it again buys the refill now, as a new setting does. */
  lastRefillFailed?: boolean;
}): RefillSettingDecision {
  if (config.refill_period === 'monthly' && balance && !lastRefillFailed && isMonthlySetting(balance, config)) return { kind: 'unchanged' };
  const columns = refillColumns(config, at);
  if (config.refill_period !== 'monthly') return { kind: 'set_threshold', columns };
  return { kind: 'start_monthly', columns, amount: config.amount, charge: config.usd_charge, description: `Monthly refill of ${config.amount} ${denomination} (first)` };
}

function isMonthlySetting(b: Pick<Balance, 'refillAmount' | 'refillUsdAmount' | 'refillThreshold' | 'nextPeriodicRefill' | 'scheduledRefill'> & { refillMaxChargesPerMonth?: number | null }, c: RefillConfig): boolean {
  if (b.nextPeriodicRefill === null || b.scheduledRefill !== null || b.refillAmount === null || b.refillUsdAmount !== c.usd_charge) return false;
  if (cmp(b.refillAmount, c.amount) !== 0) return false;
  if ((b.refillMaxChargesPerMonth ?? null) !== (c.threshold !== undefined ? (c.max_charges_per_month ?? null) : null)) return false;
  return c.threshold === undefined ? b.refillThreshold === null : b.refillThreshold !== null && cmp(b.refillThreshold, c.threshold) === 0;
}

/** A balance whose available units (held units are spoken for) are below the threshold wants a threshold refill now. */
export function isBelowThreshold(balance: Pick<Balance, 'amount' | 'pending'>, threshold: Units | null | undefined): boolean {
  return threshold !== null && threshold !== undefined && cmp(sub(balance.amount, balance.pending), threshold) < 0;
}

/** What DELETE .../auto_refill does: every refill of the balance ends, its units stay. */
export type RefillRemovalDecision = { kind: 'turn_off'; columns: typeof REFILLS_OFF } | { kind: 'conflict'; error: ApiError };

export function decideRefillRemoval({ balance }: { balance: Pick<Balance, 'id'> | null }): RefillRemovalDecision {
  if (!balance) return { kind: 'conflict', error: notFound('balance', 'denomination') };
  return { kind: 'turn_off', columns: REFILLS_OFF };
}

/** A refill change waiting for the next monthly refill, as stored on the balance and answered. */
export type ScheduledRefill = { amount: Units; usd_charge: number; effective_at: string };

export type ScheduledRefillDecision = { kind: 'schedule'; change: ScheduledRefill } | { kind: 'conflict'; error: ApiError };

/** PUT /accounts/{id}/auto_refill: the change takes effect at the balance's next monthly refill (a decrease included). */
export function decideScheduledRefillChange({ balance, input }: { balance: Pick<Balance, 'nextPeriodicRefill'> | null; input: { amount: Units; usd_charge: number } }): ScheduledRefillDecision {
  if (!balance) return { kind: 'conflict', error: notFound('balance', 'denomination') };
  if (!balance.nextPeriodicRefill) {
    return { kind: 'conflict', error: invalid('That balance has no monthly refill to change: set one with PUT /v1/accounts/{account_id}/balance/{denomination}/auto_refill.', 'denomination') };
  }
  return { kind: 'schedule', change: { amount: input.amount, usd_charge: input.usd_charge, effective_at: balance.nextPeriodicRefill.toISOString() } };
}

/** Everything a mid-month change decides on, read before anything is written. */
export type MidMonthFacts = {
  at: Date;
  accountId: string;
  input: { denomination: string; amount: Units; usd_charge: number };
  balance: Pick<Balance, 'amount' | 'pending' | 'refillAmount' | 'refillUsdAmount' | 'nextPeriodicRefill'> | null;
  /** The charge an earlier attempt of this request (same Idempotency-Key) made. */
  earlier: Charge | null;
};

/**
 * What modifymidmonth does. `increase` charges `charge` = max(0, usd_charge − credit) and, once
 * paid, cancels `remaining` units, grants the new amount and stores `columns` (the refill day
 * moves to the day of the change).
 */
export type MidMonthDecision =
  | { kind: 'resume'; charge: Charge; credit: number }
  | { kind: 'increase'; remaining: Units; credit: number; charge: number; columns: RefillColumns; description: string }
  | { kind: 'conflict'; error: ApiError };

/**
 * modifymidmonth, decided: an increase starts at once. Remaining units (available ones: units
 * held by pending events are spoken for), at most one refill's worth, are cancelled, and their
 * value at the old unit price (usd_charge / amount), rounded half up to the cent, comes off the
 * new usd_charge. A decrease is refused: it is scheduled through PUT /accounts/{id}/auto_refill.
 * A retried request carries on with its first attempt's charge (its checks would now fail).
 */
export function decideMidMonthChange(f: MidMonthFacts): MidMonthDecision {
  const { balance: b, input } = f;
  if (f.earlier && f.earlier.accountId === f.accountId) {
    const effect = effectsOf<Effect>(f.earlier).find((e) => e.kind === 'refill');
    return { kind: 'resume', charge: f.earlier, credit: effect?.kind === 'refill' ? (effect.credit ?? 0) : 0 };
  }
  if (!b) return { kind: 'conflict', error: notFound('balance', 'denomination') };
  if (!b.refillAmount || !b.nextPeriodicRefill) return { kind: 'conflict', error: invalid('That balance has no monthly refill to modify.', 'denomination') };
  if (cmp(input.amount, b.refillAmount) <= 0 || input.usd_charge < (b.refillUsdAmount ?? 0)) {
    return { kind: 'conflict', error: invalid('modifymidmonth only increases a refill. Schedule a decrease for next month with PUT /v1/accounts/{account_id}/auto_refill.', 'amount') };
  }
  const remaining = Decimal.max(0, Decimal.min(sub(b.amount, b.pending), b.refillAmount));
  const credit = roundCents(remaining.mul(b.refillUsdAmount ?? 0).div(b.refillAmount));
  return {
    kind: 'increase',
    remaining: toUnits(remaining),
    credit,
    // What is left below the smallest card payment is carried to the next renewal (chargeAccount).
    charge: Math.max(0, input.usd_charge - credit),
    columns: refillColumns({ amount: input.amount, usd_charge: input.usd_charge, refill_period: 'monthly' }, f.at, { keepThreshold: true }),
    description: `Mid-month change to ${input.amount} ${input.denomination} for ${input.usd_charge} cents less ${credit} cents for ${toUnits(remaining)} cancelled units`,
  };
}

/**
 * What a due monthly refill does: nothing when refills were turned off meanwhile; otherwise it
 * refills, after a scheduled change takes effect. A change scheduled after this refill was
 * queued (its `effective_at` later than `due`) is meant for the following one.
 */
export type PeriodicRefillDecision =
  | { kind: 'skip' }
  | { kind: 'refill'; amount: Units; charge: number; applyScheduled: boolean; description: string };

export function decidePeriodicRefill({
  balance,
  due,
  skipped = [],
}: {
  balance: Pick<Balance, 'denomination' | 'refillAmount' | 'refillUsdAmount' | 'scheduledRefill'> | null;
  due: string;
  /** Refill days that went by while no worker ran: not charged, named in the description. */
  skipped?: string[];
}): PeriodicRefillDecision {
  if (!balance || !balance.refillAmount) return { kind: 'skip' };
  const scheduled = balance.scheduledRefill as { amount: Units; usd_charge: number; effective_at?: string } | null;
  const applyScheduled = !!scheduled && (!scheduled.effective_at || !due || new Date(scheduled.effective_at) <= new Date(due));
  const amount = applyScheduled ? scheduled!.amount : balance.refillAmount;
  const charge = applyScheduled ? scheduled!.usd_charge : (balance.refillUsdAmount ?? 0);
  const missed = skipped.length ? ` (missed while the service was down, not charged: ${skipped.map((d) => d.slice(0, 10)).join(', ')})` : '';
  return { kind: 'refill', amount, charge, applyScheduled, description: `Monthly refill of ${amount} ${balance.denomination}${missed}` };
}
