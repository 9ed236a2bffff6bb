import { query, sql, textArray, type Db } from '../client';

// What each balance is in (`negative`, `paused`, `refill_threshold`; `plan_threshold` per plan
// period): left and entered set-based, one statement each for all the balances a write moved.

/** A state a move leaves: `raisedAt` a lapsed hold's rise, `after` the balance's available after the move. */
export type LeftState = { balanceId: string; kind: string; raisedAt: string | null; after: string };

/**
 * Clears the states the moves left. A pause recorded after a lapsed hold's rise already saw the
 * raised balance: it stands. A pause lasts until `available` is sufficient again: at least the
 * cost it was refused for (0 for one entered by a drop below zero; any rise for one recorded without it).
 */
export async function leaveNotificationStates(db: Db, left: LeftState[]): Promise<void> {
  await query(
    db,
    sql`delete from notification_states n
      using unnest(${textArray(left.map((f) => f.balanceId))}, ${textArray(left.map((f) => f.kind))}, ${textArray(left.map((f) => f.raisedAt))}::timestamptz[], ${textArray(left.map((f) => f.after))}::numeric[]) as v(balance_id, kind, raised_at, after)
      where n.balance_id = v.balance_id and n.kind = v.kind
        and not (n.kind = 'paused' and v.raised_at is not null and n.created_at > v.raised_at)
        and not (n.kind = 'paused' and v.after < coalesce((n.payload->>'needed')::numeric, v.after))`,
  );
}

/** A state a move enters (`period` '' for those not per plan period; `needed` what a pause waits for). */
export type EnteredState = { balanceId: string; kind: string; period: string; needed: string | null };

/** Enters the states, each at most once; returns those this statement entered (not already in). */
export async function enterNotificationStates(db: Db, entered: EnteredState[], now: Date): Promise<{ balance_id: string; kind: string; period: string }[]> {
  return query<{ balance_id: string; kind: string; period: string }>(
    db,
    sql`insert into notification_states (balance_id, kind, period, payload, created_at)
      select v.balance_id, v.kind, v.period, case when v.needed is not null then jsonb_build_object('needed', v.needed) end, ${now.toISOString()}::timestamptz
      from unnest(${textArray(entered.map((e) => e.balanceId))}, ${textArray(entered.map((e) => e.kind))}, ${textArray(entered.map((e) => e.period))}, ${textArray(entered.map((e) => e.needed))})
        as v(balance_id, kind, period, needed)
      on conflict do nothing returning balance_id, kind, period`,
  );
}
