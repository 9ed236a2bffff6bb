-- Units held by the live pending events of one balance (account and denomination).
-- VOLATILE on purpose: under READ COMMITTED every query inside a volatile function takes a fresh
-- snapshot. A statement that locks a balance row may have waited for another transaction that
-- added a hold under the same lock; the statement's own snapshot, taken before the wait, misses
-- that hold, while this function, called on the locked row, sees it. Callers evaluate it above
-- the row lock (on the output of a MATERIALIZED CTE that takes FOR UPDATE).
CREATE OR REPLACE FUNCTION live_pending(p_account_id text, p_denomination text, p_now timestamptz)
RETURNS numeric
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
  RETURN (
    SELECT coalesce(sum(e.cost_amount), 0)
    FROM events e
    WHERE e.account_id = p_account_id
      AND e.cost_denomination = p_denomination
      AND e.state = 'pending'
      AND e.expires_at > p_now
  );
END
$$;
--> statement-breakpoint
-- The same for many balances at once (a batch), one query instead of one call per balance.
-- Callers pass arrays aggregated from the locked rows, so it runs after every lock is taken.
CREATE OR REPLACE FUNCTION live_pending_many(p_account_ids text[], p_denominations text[], p_now timestamptz)
RETURNS TABLE (account_id text, denomination text, pending numeric)
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
  RETURN QUERY
    SELECT e.account_id, e.cost_denomination, sum(e.cost_amount)
    FROM events e
    JOIN unnest(p_account_ids, p_denominations) AS v(account_id, denomination)
      ON e.account_id = v.account_id AND e.cost_denomination = v.denomination
    WHERE e.state = 'pending' AND e.expires_at > p_now
    GROUP BY e.account_id, e.cost_denomination;
END
$$;
