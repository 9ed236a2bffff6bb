import { and, eq, gte, inArray, lt, or, gt, lte, type SQL } from 'drizzle-orm';
import { isUniqueViolation, NO_JIT, query, sql, type Db } from '../../db/client';
import { events, type EventState, type RejectReason } from '../../db/schema';
import { idRange, newId } from '../../ids';
import { ApiError, conflict, invalid, notFound } from '../../errors';
import { add, cmp, Decimal, sub, unitsOut, type Units } from '../../money';
import { keysetPage, type PageQuery } from '../../db/keyset';
import { completeHold, ensureBalances, findBalance, moveBalances, planAlertOf, releaseHolds, type Balance, type BalanceMove } from '../balances/balances';
import { insertDeliveries } from '../webhooks/outbox';
import { addUsage, priceByRule, priceEvents, priceGraduated, type ItemPrice } from './pricing';
import { moveRules, movedBalance, notifyMoves, type MovedBalance } from '../balances/crossings';
import { leftStates, type Outcome } from '../balances/move-decision';
import { HOLD_MS } from './constants';
import { recordSingleEvent } from './single';
import { recordInGroup } from './group';
import { insertEvents } from '../../db/sql/events';
import { lockBalances, moveBalancesForEvents, type LedgerMove } from '../../db/sql/balance-move';
import type { BatchItem, EventInput } from './input';

export type EventRow = typeof events.$inferSelect;
export type { BatchItem, EventInput };

/** The filters of GET /v1/companies/{company_id}/events. */
export type EventFilter = PageQuery & {
  account_id?: string;
  type?: string;
  state?: 'pending' | 'complete' | 'cancelled' | 'rejected';
  created_gte?: string;
  created_lt?: string;
  /** properties[key]=value: events whose property `key` reads as `value`. */
  properties?: Record<string, string>;
};
export { HOLD_MS };

/** When a hold placed now lapses: `expires_in` seconds from now, one hour by default. */
export const holdExpiry = (now: Date, expiresIn?: number) => new Date(now.getTime() + (expiresIn !== undefined ? expiresIn * 1000 : HOLD_MS));

const costOut = (amount: string | null, denomination: string | null) => (amount !== null && denomination ? { amount: unitsOut(amount), denomination } : null);

/** An expired hold reads as cancelled even before the worker has flipped it. */
export function effectiveState(e: Pick<EventRow, 'state' | 'expiresAt'>, now: Date): EventState {
  if (e.state === 'pending' && e.expiresAt && e.expiresAt.getTime() <= now.getTime()) return 'cancelled';
  return e.state;
}

export function serializeEvent(e: EventRow, now: Date) {
  const state = effectiveState(e, now);
  return {
    id: e.id,
    account_id: e.accountId,
    type: e.type,
    state,
    cost: costOut(e.costAmount, e.costDenomination),
    held_cost: costOut(e.heldCost, e.costDenomination),
    priced_by: e.pricedBy,
    pricing: e.pricing ? { rule: e.pricing.rule, components: e.pricing.components.map((c) => ({ quantity: unitsOut(c.quantity), amount: unitsOut(c.amount) })) } : null,
    quantities: e.quantities ? Object.fromEntries(Object.entries(e.quantities).map(([k, q]) => [k, unitsOut(q)])) : {},
    properties: e.properties ?? {},
    reason: e.reason,
    gate_on_balance: e.gateOnBalance,
    metadata: e.metadata,
    idempotency_key: e.idempotencyKey,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt?.toISOString() ?? null,
    expires_at: state === 'pending' && e.expiresAt ? e.expiresAt.toISOString() : null,
  };
}

type Priced = { index: number; item: BatchItem } & Omit<ItemPrice, 'found'>;

/** Thrown inside a savepoint to decide a batch's graduated items again. */
class Redecide extends Error {}

const key = (accountId: string, denomination: string) => `${accountId}\u0000${denomination}`;

/**
 * Records a batch of events in one database transaction with set-based statements: balances
 * locked once each in (account, denomination) order, one multi-row insert of events, one of
 * ledger rows, one update of the touched balances. Gated items that lack `available` are
 * recorded as rejected and charge nothing. Returns records in request order.
 */
export async function recordEvents({ db, companyId, items, now }: { db: Db; companyId: string; items: BatchItem[]; now: Date }): Promise<EventRow[]> {
  const prices = await priceEvents(db, companyId, items);
  const missing = prices.findIndex((p) => !p.found);
  if (missing >= 0) throw notFound('account', `[${missing}].account_id`);
  const priced: Priced[] = items.map((item, index) => ({ ...prices[index], index, item }));

  let ensureAll = false;
  for (let attempt = 0; ; attempt++) {
    try {
      return await writeEvents(db, companyId, priced, now, ensureAll);
    } catch (err) {
      // Two requests raced on one idempotency key: the loser re-reads the winner's record.
      if (attempt < 2 && isUniqueViolation(err)) continue;
      // A balance priced as there was gone when locked: written again with every balance made sure of.
      if (attempt < 2 && err instanceof BalanceGone) {
        ensureAll = true;
        continue;
      }
      throw err;
    }
  }
}

/** A balance the batch was priced on was deleted before its lock was taken: its transaction is rolled back and written again. */
class BalanceGone extends Error {}

async function writeEvents(db: Db, companyId: string, priced: Priced[], now: Date, ensureAll: boolean): Promise<EventRow[]> {
  const keys = [...new Set(priced.map((p) => p.item.idempotency_key).filter((k): k is string => Boolean(k)))];
  const existing = new Map<string, EventRow>();
  if (keys.length) {
    const rows = await db.select().from(events).where(and(eq(events.companyId, companyId), inArray(events.idempotencyKey, keys)));
    for (const r of rows) existing.set(r.idempotencyKey!, r);
  }

  return db.transaction(async (tx) => {
    const fresh = priced.filter((p) => !p.item.idempotency_key || !existing.has(p.item.idempotency_key));
    // Within one batch, the first item with a key wins; later repeats return its record.
    const seenKeys = new Set<string>();
    const toInsert = fresh.filter((p) => {
      const k = p.item.idempotency_key;
      if (!k) return true;
      if (seenKeys.has(k)) return false;
      seenKeys.add(k);
      return true;
    });

    const row = (p: Priced, id: string, state: EventState, reason: EventRow['reason'] = null): EventRow => ({
      id,
      companyId,
      accountId: p.item.account_id,
      type: p.item.type,
      state,
      costAmount: p.cost?.amount ?? null,
      costDenomination: p.cost?.denomination ?? null,
      pricedBy: p.pricedBy,
      gateOnBalance: p.item.gate_on_balance ?? false,
      metadata: p.item.metadata ?? {},
      idempotencyKey: p.item.idempotency_key ?? null,
      createdAt: now,
      updatedAt: now,
      expiresAt: state === 'pending' ? holdExpiry(now, p.item.expires_in) : null,
      quantities: p.item.quantities ?? null,
      properties: p.item.properties ?? null,
      pricing: p.pricing,
      heldCost: state === 'pending' ? (p.cost?.amount ?? null) : null,
      reason: state === 'rejected' ? reason : null,
    });
    // Events whose state does not hang on the balance (all but gated ones) are written before
    // the balances are locked, so the locks are held only for the ledger and balance writes:
    // concurrent batches over the same accounts wait on each other for less.
    const ids = toInsert.map(() => newId('ev'));
    // A graduated price and a spend limit are decided under the balance's lock too.
    const early = toInsert.map((p, i) => (p.cost && (p.item.gate_on_balance || p.graduated || p.limited) ? null : row(p, ids[i], p.item.state ?? 'complete')));
    const earlyRows = early.filter((r): r is EventRow => r !== null);
    if (earlyRows.length) await insertEvents(tx, { companyId, now }, earlyRows);
    // Those holds are visible to this transaction's pending read below; the loop adds them in order.
    const ownHolds = new Map<string, Units>();
    for (const r of earlyRows) {
      if (r.state !== 'pending' || !r.costAmount || !r.costDenomination) continue;
      const k = key(r.accountId, r.costDenomination);
      ownHolds.set(k, add(ownHolds.get(k) ?? '0', r.costAmount));
    }

    const billed = toInsert.filter((p) => p.cost);
    const eventRows: EventRow[] = [];
    const moved: MovedBalance[] = [];
    if (billed.length) {
      // Only balances that did not exist when the batch was priced are created (in one sorted insert).
      const unseen = ensureAll ? billed : billed.filter((p) => !p.hasBalance);
      if (unseen.length) await ensureBalances(tx, unseen.map((p) => ({ accountId: p.item.account_id, companyId, denomination: p.cost!.denomination })), now);
      const pairs = [...new Map(billed.map((p) => [key(p.item.account_id, p.cost!.denomination), [p.item.account_id, p.cost!.denomination] as const])).values()];
      // The company's batches take turns here, before either locking statement below takes its
      // snapshot. Waiting inside it for a row lock instead would make PostgreSQL re-check the
      // locking query for every row another batch had moved (READ COMMITTED's EvalPlanQual),
      // and against the join with the pairs each re-check re-reads all of them.
      // With it, the statements after it in the transaction (and in any transaction it is part
      // of) are planned for their own arrays' sizes, not on a generic plan that assumes ten.
      // Without the JIT compiler (NO_JIT): a batch's statements are estimated above its threshold
      // once a rate card makes them long, and compiling them at every run tripled their cost.
      await query(tx, sql`select pg_advisory_xact_lock(hashtextextended(${`event-batches:${companyId}`}, 0)), set_config('plan_cache_mode', 'force_custom_plan', true), ${NO_JIT}`);
      let general = false;
      if (earlyRows.length === toInsert.length) {
        // No state hangs on a balance: one statement locks, writes the ledger and moves the balances.
        const pairIndex = new Map(pairs.map(([a, d], i) => [key(a, d), i]));
        const moves: LedgerMove[] = [];
        // What the moves take from each pair (null: none moves it).
        const totals: (Units | null)[] = pairs.map(() => null);
        for (const r of earlyRows) {
          if (r.state === 'complete' && r.costAmount && r.costDenomination) {
            const pair = pairIndex.get(key(r.accountId, r.costDenomination))!;
            moves.push({ pair, cost: r.costAmount, eventId: r.id, type: r.type });
            const total = totals[pair];
            totals[pair] = total === null ? r.costAmount : add(total, r.costAmount);
          }
        }
        const holds = pairs.map(([a, d]) => ownHolds.get(key(a, d)) ?? '0');
        // The balances that only need their balance_change are notified by the statement itself;
        // the ones it returns crossed something, are in a state, or changed by holds alone.
        const notify = (source: SQL) => insertDeliveries(companyId, now.toISOString(), source);
        const rows = await moveBalancesForEvents(tx, { pairs, ownHolds: holds, totals, moves, companyId, now, rules: moveRules, notify });
        if (rows === 'lost') throw new BalanceGone();
        // A balance whose grants the statement cannot move alone (one is due, or the draws pass
        // the head grant): it wrote nothing, and the general writer takes the batch.
        if (rows === 'general') general = true;
        for (const b of rows === 'general' ? [] : rows) {
          const before = sub(b.amount, sub(b.pending, ownHolds.get(key(b.account_id, b.denomination)) ?? '0'));
          const after = sub(b.new_amount, b.pending);
          moved.push(
            movedBalance(
              { accountId: b.account_id, denomination: b.denomination, id: b.id, threshold: b.refill_threshold, planAlert: planAlertOf(b), hasStates: b.has_states },
              {
                amount: b.new_amount,
                after,
                changed: true,
                crossed: { belowZero: b.below_zero, belowRefillThreshold: b.below_refill_threshold, planAlert: b.plan_alert },
                leaves: cmp(after, before) === 0 ? [] : leftStates.filter((st) => st.left(after, before, b.refill_threshold)).map((st) => st.kind),
                refusals: [],
              },
            ),
          );
        }
        if (!general) eventRows.push(...earlyRows);
      } else {
        general = true;
      }
      if (general) {
        // Each balance's items decided in request order by the general writer (move-decision.ts):
        // gated items, graduated prices, or balances whose grants the statement cannot move
        // alone. This transaction's own early holds are already in what it reads under the locks.
        // A graduated price is read from the account's counters under the balance's lock, each
        // item counting from the counter plus the items before it that complete. Whether a gated
        // one completes hangs on its price: decided inside a savepoint, and again (priced anew)
        // while an item counted as completing was refused, or one counted as refused passed.
        const graduated = toInsert.flatMap((p, i) => (p.cost && p.graduated && !early[i] ? [i] : []));
        if (graduated.length) await lockBalances(tx, pairs, now);
        const decidedAtOnce = !graduated.some((i) => toInsert[i].item.gate_on_balance);
        let refused = new Set<number>();
        const outcomes = new Map<number, Outcome>();
        const reasons = new Map<number, RejectReason | null>();
        const decide = async (db: Db) => {
          if (graduated.length) {
            const repriced = await priceGraduated(db, companyId, graduated.map((i) => ({ ...toInsert[i].item, counts: (toInsert[i].item.state ?? 'complete') === 'complete' && !refused.has(i) })));
            graduated.forEach((i, n) => {
              const r = repriced[n];
              if (r.cost) toInsert[i] = { ...toInsert[i], cost: r.cost, pricing: r.pricing };
            });
          }
          const moves = new Map<string, BalanceMove & { ownHolds: Units }>();
          for (const [i, p] of toInsert.entries()) {
            if (!p.cost) continue;
            const k = key(p.item.account_id, p.cost.denomination);
            const state = early[i]?.state ?? p.item.state ?? 'complete';
            let m = moves.get(k);
            if (!m) moves.set(k, (m = { accountId: p.item.account_id, denomination: p.cost.denomination, ops: [], ownHolds: ownHolds.get(k) ?? '0' }));
            // An early row's state is settled: it is decided ungated.
            m.ops.push({ op: { kind: 'event', cost: p.cost.amount, state: state === 'pending' ? 'pending' : 'complete', gate: !early[i] && (p.item.gate_on_balance ?? false), recorded: !!early[i] }, ledger: { type: 'event', description: `Event ${p.item.type}`, eventId: ids[i] }, order: i });
          }
          const list = [...moves.values()];
          const results = await moveBalances(db, companyId, list, now);
          list.forEach((m, j) =>
            m.ops.forEach((o, k) => {
              outcomes.set(o.order!, results[j].plan.outcomes[k]);
              reasons.set(o.order!, results[j].plan.reasons[k]);
            }),
          );
        };
        if (decidedAtOnce) await decide(tx);
        else {
          for (let round = 0; ; round++) {
            const settled = await tx
              .transaction(async (sp) => {
                await decide(sp);
                const rejected = new Set(graduated.filter((i) => outcomes.get(i) === 'rejected'));
                if (round < graduated.length && (rejected.size !== refused.size || [...rejected].some((i) => !refused.has(i)))) {
                  refused = rejected;
                  throw new Redecide();
                }
                return true;
              })
              .catch((err) => {
                if (err instanceof Redecide) return false;
                throw err;
              });
            if (settled) break;
          }
        }
        // The graduated items that completed count for the account's next ones.
        const counted = graduated.filter((i) => outcomes.get(i) === 'complete' && toInsert[i].pricing);
        await addUsage(tx, companyId, counted.map((i) => ({ account_id: toInsert[i].item.account_id, rule: toInsert[i].pricing!.rule, quantities: toInsert[i].item.quantities ?? null })));
        const lateRows: EventRow[] = [];
        for (const [i, p] of toInsert.entries()) {
          let r = early[i];
          if (!r) {
            r = row(p, ids[i], outcomes.get(i) ?? p.item.state ?? 'complete', reasons.get(i) ?? null);
            lateRows.push(r);
          }
          eventRows.push(r);
        }
        if (lateRows.length) await insertEvents(tx, { companyId, now }, lateRows);
      }
    } else {
      eventRows.push(...toInsert.map((p, i) => early[i] ?? row(p, ids[i], p.item.state ?? 'complete')));
      const late = eventRows.filter((r, i) => !early[i]);
      if (late.length) await insertEvents(tx, { companyId, now }, late);
    }
    await notifyMoves(tx, companyId, moved, now);

    const inserted = new Map(eventRows.map((e) => [e.idempotencyKey ?? e.id, e]));
    let cursor = 0;
    return priced.map((p) => {
      const k = p.item.idempotency_key;
      if (k && existing.has(k)) return existing.get(k)!;
      if (k) return inserted.get(k)!;
      // Items without a key were inserted in order.
      while (eventRows[cursor]?.idempotencyKey) cursor++;
      return eventRows[cursor++];
    });
  });
}

/**
 * One event; a gated event that lacks balance is recorded and answered with 402. The common
 * case is one statement (see single.ts); a first event on a new balance or an idempotent
 * repeat takes the general path. With `group`, events for one account that arrive while
 * another is being written are written together (group.ts); only a caller outside any
 * transaction of its own may ask for it.
 */
export async function recordEvent({ db, companyId, accountId, input, now, group = false }: { db: Db; companyId: string; accountId: string; input: EventInput; now: Date; group?: boolean }): Promise<{ event: EventRow; balance: Balance | null }> {
  // An event with its own idempotency key is written alone: its answer may be an earlier record.
  const result = group && !input.idempotency_key ? await recordInGroup({ db, companyId, accountId, input, now }, recordAlone, recordGroup) : await recordAlone({ db, companyId, accountId, input, now });
  const row = result.event;
  if (row.state === 'rejected' && row.reason === 'spend_limit') {
    throw new ApiError(
      'spend_limit_exceeded',
      `This event costs ${unitsOut(row.costAmount)} ${row.costDenomination}, which would take the account's spend past its limit; it was recorded as rejected and nothing was charged.`,
      null,
      { rejected_event_id: row.id },
    );
  }
  if (row.state === 'rejected') {
    throw new ApiError(
      'insufficient_balance',
      `This event costs ${unitsOut(row.costAmount)} ${row.costDenomination}, more than the balance has available; it was recorded as rejected and nothing was charged.`,
      null,
      { rejected_event_id: row.id },
    );
  }
  return result;
}

/** A group's events as one batch; an unknown account is the caller's `account_id`, not a batch item's. */
async function recordGroup(args: { db: Db; companyId: string; items: BatchItem[]; now: Date }): Promise<EventRow[]> {
  try {
    return await recordEvents(args);
  } catch (err) {
    if (err instanceof ApiError && err.type === 'not_found') throw notFound('account', 'account_id');
    throw err;
  }
}

async function recordAlone({ db, companyId, accountId, input, now }: { db: Db; companyId: string; accountId: string; input: EventInput; now: Date }): Promise<{ event: EventRow; balance: Balance | null }> {
  const fast = await recordSingleEvent({ db, companyId, accountId, input, now });
  if (fast === 'not_found') throw notFound('account', 'account_id');
  if (fast) return fast;
  // The balance is read in the event's transaction, while the event still holds it locked: read
  // after the commit, it could already include what another writer did since. An idempotent
  // repeat answers the first record, whichever of the company's accounts it was for, with its balance.
  return db.transaction(async (tx) => {
    const [event] = await recordEvents({ db: tx, companyId, items: [{ ...input, account_id: accountId }], now });
    const balance = event.costDenomination ? await findBalance({ db: tx, accountId: event.accountId, denomination: event.costDenomination, now }) : null;
    return { event, balance };
  });
}

export async function getEvent({ db, companyId, eventId }: { db: Db; companyId: string; eventId: string }) {
  const [row] = await db.select().from(events).where(and(eq(events.id, eventId), eq(events.companyId, companyId)));
  if (!row) throw notFound('event', 'event_id');
  return row;
}

/** What a PUT on an event asks: complete or cancel a hold (complete at an actual), or extend it. */
export type Transition = {
  state?: 'complete' | 'cancelled';
  cost_override_amount?: Units;
  quantities?: Record<string, Units>;
  overage_behavior?: 'allow' | 'cap' | 'reject';
  expires_in?: number;
};

/**
 * Completes or cancels a hold, or extends it (`expires_in` alone). Only a live pending event can
 * move; anything else is 409, except the same transition sent again: the same body answers the
 * record and changes nothing, a different final amount is 409. A completion may carry the
 * actual usage (`cost_override_amount` in the held denomination, or `quantities` priced by the
 * rule that priced the hold): less than held releases the rest; more is taken too, as
 * `overage_behavior` says (allow, cap at the held cost plus what is available, or reject with
 * 409 `insufficient_balance`, the hold staying pending). The record keeps `held_cost`.
 */
export async function transitionEvent({ db, companyId, eventId, change, now }: { db: Db; companyId: string; eventId: string; change: Transition; now: Date }) {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .select()
      .from(events)
      .where(and(eq(events.id, eventId), eq(events.companyId, companyId)))
      .for('update');
    if (!row) throw notFound('event', 'event_id');
    const current = effectiveState(row, now);
    const { state } = change;
    if (current !== 'pending') {
      // Sent again: a hold that lapsed unsent was never cancelled by this call, so it is no repeat.
      // The sweep writes a lapsed hold's cancellation at or after its expiry; a call, before it.
      const byCall = !row.expiresAt || (row.updatedAt !== null && row.updatedAt.getTime() < row.expiresAt.getTime());
      if (state && row.state === state && byCall && (row.heldCost !== null || row.costAmount === null)) return repeated(row, change);
      const why = row.state === 'pending' ? `it expired at ${row.expiresAt!.toISOString()} and was cancelled` : `it is ${current}`;
      throw conflict(`Only a pending event can be completed, cancelled or extended; ${why}.`, state ? 'state' : 'expires_in');
    }
    if (!state) {
      // Extended: the hold lasts expires_in seconds from now.
      const [extended] = await tx.update(events).set({ expiresAt: holdExpiry(now, change.expires_in), updatedAt: now }).where(eq(events.id, eventId)).returning();
      return extended;
    }
    if (row.costAmount === null || !row.costDenomination) {
      if (change.cost_override_amount !== undefined || change.quantities) throw invalid('This hold is not billed: it has no cost to settle at an actual.', change.quantities ? 'quantities' : 'cost_override_amount');
      const [updated] = await tx.update(events).set({ state, updatedAt: now }).where(eq(events.id, eventId)).returning();
      return updated;
    }
    const held = row.costAmount;
    const denomination = row.costDenomination;
    if (state === 'cancelled') {
      const [updated] = await tx.update(events).set({ state, heldCost: held, updatedAt: now, expiresAt: row.expiresAt }).where(eq(events.id, eventId)).returning();
      await releaseHolds(tx, [{ companyId, accountId: row.accountId, denomination, amount: held }], now);
      return updated;
    }
    // The balance is locked before the actual is priced: a graduated count and what is available stay as read.
    await lockBalances(tx, [[row.accountId, denomination]], now);
    const actual = await actualOf(tx, companyId, row, change);
    let cost = actual.amount;
    const extra = sub(cost, held);
    if (cmp(extra, '0') > 0 && change.overage_behavior && change.overage_behavior !== 'allow') {
      const balance = await findBalance({ db: tx, accountId: row.accountId, denomination, now });
      const available = balance ? sub(balance.amount, balance.pending) : '0';
      if (cmp(extra, available) > 0) {
        if (change.overage_behavior === 'reject') {
          throw new ApiError(
            'insufficient_balance',
            `The actual cost ${unitsOut(cost)} ${denomination} is ${unitsOut(extra)} more than was held, and the balance has ${unitsOut(available)} available; the hold stays pending.`,
            'state',
            {},
            {},
            409,
          );
        }
        cost = add(held, cmp(available, '0') > 0 ? available : '0');
      }
    }
    const [updated] = await tx
      .update(events)
      .set({ state, costAmount: cost, heldCost: held, updatedAt: now, ...(actual.pricing && { pricing: actual.pricing }), ...(change.quantities && { quantities: change.quantities }) })
      .where(eq(events.id, eventId))
      .returning();
    await completeHold(tx, { companyId, accountId: row.accountId, denomination, cost, held, type: 'event', description: `Event ${row.type} (hold completed)`, eventId: row.id }, now);
    // A graduated price's quantities count once the hold completes.
    if (updated.pricing) await addUsage(tx, companyId, [{ account_id: row.accountId, rule: updated.pricing.rule, quantities: updated.quantities }]);
    return updated;
  });
}

/** The actual a completion settles at: the amount sent, the quantities priced by the hold's rule, or what was held. */
async function actualOf(db: Db, companyId: string, row: EventRow, change: Transition): Promise<{ amount: Units; pricing: EventRow['pricing'] | null }> {
  if (change.cost_override_amount !== undefined) return { amount: change.cost_override_amount, pricing: null };
  if (!change.quantities) return { amount: row.costAmount!, pricing: null };
  if (!row.pricing) throw invalid("quantities settle a hold the plan's rate card priced; this one was priced by an override, so send cost_override_amount.", 'quantities');
  const priced = await priceByRule(db, companyId, row.accountId, row.pricing.rule, change.quantities);
  if (!priced || priced.denomination !== row.costDenomination) {
    throw conflict("The rule that priced this hold is no longer in the account's plan; send cost_override_amount.", 'quantities');
  }
  return { amount: priced.amount, pricing: priced.pricing };
}

/** The same completion or cancellation again: the record when it asks the same final amount, 409 otherwise. */
function repeated(row: EventRow, change: Transition): EventRow {
  if (change.state === 'cancelled' || row.costAmount === null) return row;
  const cost = row.costAmount!;
  let asked: Units | null = null;
  if (change.cost_override_amount !== undefined) asked = change.cost_override_amount;
  else if (change.quantities) asked = JSON.stringify(sortKeys(change.quantities)) === JSON.stringify(sortKeys(row.quantities ?? {})) ? cost : null;
  else asked = row.heldCost;
  // Capped, the record keeps less than was asked: the same ask is still the same transition.
  const same = asked !== null && (cmp(asked, cost) === 0 || (change.overage_behavior === 'cap' && cmp(asked, cost) > 0 && cmp(cost, row.heldCost!) >= 0));
  if (!same) throw conflict(`This hold was already completed at ${unitsOut(cost)} ${row.costDenomination}; a different final amount cannot be applied.`, 'state');
  return row;
}

const sortKeys = (o: Record<string, Units>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, new Decimal(v).toFixed()]));

/** The company's events, newest first, with the filters of GET /v1/companies/{company_id}/events. */
export async function listEvents({ db, companyId, q, now }: { db: Db; companyId: string; q: EventFilter; now: Date }) {
  const stateFilter =
    q.state === 'pending'
      ? and(eq(events.state, 'pending'), gt(events.expiresAt, now))
      : q.state === 'cancelled'
        ? or(eq(events.state, 'cancelled'), and(eq(events.state, 'pending'), lte(events.expiresAt, now)))
        : q.state
          ? eq(events.state, q.state)
          : undefined;
  const from = q.created_gte ? new Date(q.created_gte) : null;
  const to = q.created_lt ? new Date(q.created_lt) : null;
  const ids = idRange('ev', from, to);
  return keysetPage(
    db.select().from(events).$dynamic(),
    events.id,
    q,
    eq(events.companyId, companyId),
    q.account_id ? eq(events.accountId, q.account_id) : undefined,
    q.type ? eq(events.type, q.type) : undefined,
    stateFilter,
    from ? gte(events.createdAt, from) : undefined,
    to ? lt(events.createdAt, to) : undefined,
    ids.gte ? gte(events.id, ids.gte) : undefined,
    ids.lt ? lt(events.id, ids.lt) : undefined,
    // properties[key]=value: the property as text (a number or boolean as JSON writes it).
    ...Object.entries(q.properties ?? {}).map(([k, v]) => sql`${events.properties}->>${k} = ${v}`),
  );
}

/**
 * Flips holds past their hour to cancelled (reads already treat them so), and notifies the rise
 * of `available` they left behind, in the same transaction.
 */
export async function expireHolds(db: Db, now: Date): Promise<number> {
  return db.transaction(async (tx) => {
    const rows = await tx
      .update(events)
      .set({ state: 'cancelled', updatedAt: now })
      .where(and(eq(events.state, 'pending'), lte(events.expiresAt, now)))
      .returning({ companyId: events.companyId, accountId: events.accountId, denomination: events.costDenomination, amount: events.costAmount, expiresAt: events.expiresAt });
    const released = new Map<string, { companyId: string; accountId: string; denomination: string; amount: Units; lapsedAt: Date }>();
    for (const r of rows) {
      if (r.amount === null || !r.denomination) continue;
      const k = key(r.accountId, r.denomination);
      const prev = released.get(k);
      released.set(k, { companyId: r.companyId, accountId: r.accountId, denomination: r.denomination, amount: add(prev?.amount ?? '0', r.amount), lapsedAt: prev && prev.lapsedAt > r.expiresAt! ? prev.lapsedAt : r.expiresAt! });
    }
    await releaseHolds(tx, [...released.values()], now);
    return rows.length;
  });
}
