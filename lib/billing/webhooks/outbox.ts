import type { Placeholder, SQL } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../../db/client';
import { newId } from '../../ids';
import type { Topic } from './topics';
import { MAX_ATTEMPTS } from './schedule';

export type Notification = { accountId: string; denomination: string; topic: Topic; balance: string; detail?: Record<string, unknown> };

/**
 * Writes one delivery per subscribed webhook into the outbox, in the caller's transaction, so a
 * rolled-back change never notifies. `balance_change` is coalesced: while one is still waiting
 * for a webhook, account and denomination (`pending`: not sent yet, or waiting for a retry after
 * failed attempts; not while one is being sent, nor while one waits for its last attempt, whose
 * failure would lose the change), no second one is queued, since the send carries the balance at
 * send time. The single-event statement (events/single.ts) and a batch's balance
 * statement write their `balance_change` rows through the same `insertDeliveries`. One
 * statement, whatever the number of notifications.
 */
export async function enqueueNotifications(db: Db, companyId: string, items: Notification[], now: Date): Promise<void> {
  if (!items.length) return;
  const col = (f: (n: Notification) => string) => textArray(items.map(f));
  await query(
    db,
    insertDeliveries(
      companyId,
      now.toISOString(),
      sql`unnest(${col((n) => n.accountId)}, ${col((n) => n.denomination)}, ${col((n) => n.topic)}, ${col((n) => n.balance)},
        ${col((n) => JSON.stringify(n.detail ?? {}))}, ${col(() => newId('whd'))}) with ordinality as v(account_id, denomination, topic, balance, detail, base_id, ord)`,
    ),
  );
}

/**
 * The outbox insert over `source`, a relation `v` with the columns account_id, denomination,
 * topic, balance and detail (text), base_id (a `whd_` id, made once per notification) and ord:
 * one delivery per webhook of the company subscribed to the topic, `balance_change` coalesced.
 * The deliveries still waiting are read once, with a snapshot of their own
 * (`balance_changes_waiting`), and only when some webhook is subscribed to `balance_change`:
 * a statement that waited for a balance's lock took its own snapshot before the wait.
 * `companyId` and `at` (an ISO 8601 time) may be placeholders of a compiled statement.
 */
export function insertDeliveries(companyId: string | Placeholder, at: string | Placeholder, source: SQL): SQL {
  return sql`insert into webhook_deliveries (id, company_id, webhook_id, topic, account_id, denomination, payload, status, attempts, next_attempt_at, coalesce_key, created_at, updated_at)
    with n as materialized (
      select v.base_id, v.topic, v.account_id, v.denomination, v.balance, v.detail, v.ord, s.webhook_id,
        case when v.topic = 'balance_change' then ${balanceChangeKey(sql`s.webhook_id`, sql`v.account_id`, sql`v.denomination`)} end as coalesce_key
      from ${source}
      join webhook_subscriptions s on s.company_id = ${companyId} and s.topic = v.topic
    )
    select n.base_id || '_' || substr(md5(n.webhook_id), 1, 8), ${companyId}, n.webhook_id, n.topic, n.account_id, n.denomination,
      jsonb_build_object('balance', n.balance, 'detail', n.detail::jsonb), 'pending', 0, ${at}::timestamptz, n.coalesce_key, ${at}::timestamptz, ${at}::timestamptz
    from n
    where n.coalesce_key is null
      or n.coalesce_key not in (select w.waiting_key from balance_changes_waiting(array(select k.coalesce_key from n k where k.coalesce_key is not null), ${sql.raw(String(MAX_ATTEMPTS - 1))}) w)
    order by n.ord`;
}

/** The key `balance_change` deliveries coalesce on: one webhook, account and denomination. */
function balanceChangeKey(webhookId: SQL, accountId: SQL, denomination: SQL): SQL {
  return sql`(${webhookId} || ':' || ${accountId} || ':' || ${denomination})`;
}
