-- The coalesce keys among p_keys whose balance_change delivery is still waiting to be sent, read
-- with a snapshot of its own. A statement that first waited for balance row locks took its own
-- snapshot before the wait: deliveries queued, claimed or sent meanwhile would be invisible to
-- it, so it could queue a second one, or skip one whose balance was already read for sending.
-- A VOLATILE function is neither inlined nor run on its caller's snapshot (as live_pending).
CREATE OR REPLACE FUNCTION balance_changes_waiting(p_keys text[])
RETURNS TABLE (waiting_key text)
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
  RETURN QUERY
    SELECT DISTINCT d.coalesce_key
    FROM webhook_deliveries d
    WHERE d.coalesce_key = ANY (p_keys) AND d.status = 'pending';
END
$$;
