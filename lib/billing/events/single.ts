import type { SQL } from 'drizzle-orm';
import { compile, runCompiled, sql, type Compiled, type Db } from '../../db/client';
import { newId } from '../../ids';
import { add } from '../../money';
import type { events, EventState, PricedBy } from '../../db/schema';
import { balanceFromRow, type Balance } from '../balances/balances';
import { singleEventStatement } from '../../db/sql/balance-move';
import { HOLD_MS } from './constants';
import type { EventInput } from './input';
import { eventPrice, pricingPlanId } from './pricing';
import { moveRules } from '../balances/crossings';
import { insertDeliveries } from '../webhooks/outbox';

type EventRow = typeof events.$inferSelect;

/** What the statement answers: the event's decision, and its balance as locked (`b_` and the table's column names). */
type Row = {
  account_id: string;
  cost: string | null;
  denomination: string | null;
  priced_by: PricedBy;
  state: EventState;
  inserted: EventState | null;
  new_amount: string | null;
  b_id: string | null;
  b_pending: string | null;
  crossing: boolean | null;
  [column: `b_${string}`]: unknown;
};

/** How often the statement wrote its event, and how often it handed it to the general path (observable by tests). */
export const singleStatement = { wrote: 0, handedOver: 0 };

const v = (name: string) => sql.placeholder(name);
/** The statement below as SQL text: built on first use, then prepared once per connection. */
let singleEvent: Compiled | undefined;
/** The single-event statement (lib/db/sql/balance-move.ts), with the domain's pricing, rules and outbox. */
function statement(): SQL {
  return singleEventStatement({
    account: sql`select a.id, ${pricingPlanId(sql`a`)} as plan_id, a.last_plan_renewal from accounts a where a.id = ${v('accountId')} and a.company_id = ${v('companyId')}`,
    price: sql`select acct.id as account_id, pr.amount, pr.denomination, pr.priced_by
        from acct cross join lateral ${eventPrice({ planId: sql`acct.plan_id`, type: sql`${v('type')}::text`, overrideAmount: sql`${v('ovrAmount')}::numeric`, overrideDenomination: sql`${v('ovrDenomination')}::text` })} pr`,
    rules: moveRules,
    notify: (source) => insertDeliveries(v('companyId'), v('at'), source),
    v,
  });
}

/**
 * One event in one statement: price (override or the plan's rule), lock the balance, gate on
 * `available`, insert the event, move the balance, write its ledger row and its balance_change
 * outbox rows. Returns null when the general path must take over: the balance does not exist
 * yet, the idempotency key was already used, or the event crosses something that notifies.
 */
export async function recordSingleEvent({ db, companyId, accountId, input, now }: { db: Db; companyId: string; accountId: string; input: EventInput; now: Date }): Promise<{ event: EventRow; balance: Balance | null } | 'not_found' | null> {
  const ovrAmount = input.cost_override?.amount ?? null;
  const ovrDenomination = input.cost_override?.denomination ?? null;
  const gate = input.gate_on_balance ?? false;
  const requested = input.state ?? 'complete';
  const eventId = newId('ev');
  const metadata = input.metadata ?? {};
  const idem = input.idempotency_key ?? null;
  const at = now.toISOString();
  const expires = new Date(now.getTime() + HOLD_MS).toISOString();

  // One autocommit statement: no BEGIN/COMMIT round trips. It only writes when the event
  // crosses nothing (no drop below zero or a threshold, no refusal), so the outbox rows it
  // needs are just `balance_change`, written by the same statement. Anything else returns
  // `crossing` and the transactional path records the event with all its notifications.
  {
    const [row] = await runCompiled<Row>(db, (singleEvent ??= compile(statement())), {
      accountId,
      companyId,
      type: input.type,
      ovrAmount,
      ovrDenomination,
      at,
      gate,
      requested,
      eventId,
      metadata: JSON.stringify(metadata),
      idem,
      expires,
      description: `Event ${input.type}`,
      deliveryId: newId('whd'),
    });
    if (!row) return 'not_found';
    // Nothing written: a new balance, a repeated idempotency key, or a crossing.
    if (!row.inserted) {
      singleStatement.handedOver++;
      return null;
    }
    singleStatement.wrote++;

    const state = row.inserted;
    const cost = row.cost;
    const event: EventRow = {
      id: eventId,
      companyId,
      accountId,
      type: input.type,
      state,
      costAmount: cost,
      costDenomination: row.denomination,
      pricedBy: row.priced_by,
      gateOnBalance: gate,
      metadata,
      quantities: null,
      properties: null,
      idempotencyKey: idem,
      createdAt: now,
      updatedAt: now,
      expiresAt: state === 'pending' ? new Date(expires) : null,
    };
    if (!cost || !row.b_id || !row.denomination) return { event, balance: null };

    // The balance as the statement locked it, moved by this event.
    const locked = balanceFromRow(Object.fromEntries(Object.entries(row).filter(([k]) => k.startsWith('b_')).map(([k, x]) => [k.slice(2), x])));
    const moved = row.new_amount !== null;
    const balance: Balance = {
      ...locked,
      amount: row.new_amount ?? locked.amount,
      pending: state === 'pending' ? add(locked.pending, cost) : locked.pending,
      updatedAt: moved ? now : locked.updatedAt,
    };
    return { event, balance };
  }
}
