-- As balance_changes_waiting(text[]), but only deliveries with fewer than p_attempts_below
-- attempts count as waiting: a change is not merged into a delivery that waits for its last
-- attempt, where a failure would lose it. The one-argument version stays for processes of the
-- version before during a rolling start.
CREATE OR REPLACE FUNCTION balance_changes_waiting(p_keys text[], p_attempts_below int)
RETURNS TABLE (waiting_key text)
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
  RETURN QUERY
    SELECT DISTINCT d.coalesce_key
    FROM webhook_deliveries d
    WHERE d.coalesce_key = ANY (p_keys) AND d.status = 'pending' AND d.attempts < p_attempts_below;
END
$$;
