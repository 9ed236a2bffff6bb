-- A plan's rate card in SQL: the one form the single-event statement and the batch pricing call
-- (lib/billing/events/pricing.ts). The rules are those of lib/billing/events/rate-card.ts, and a
-- differential property test holds the two to one answer on both databases.
--
-- rate_card_match: the 0-based index of the first rule of p_type whose filters all match
-- p_properties (a filter is a value or an array of values; a missing property matches nothing).
CREATE OR REPLACE FUNCTION rate_card_match(p_rules jsonb, p_type text, p_properties jsonb)
RETURNS integer
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT (r.n - 1)::integer
  FROM jsonb_array_elements(p_rules) WITH ORDINALITY AS r(rule, n)
  WHERE r.rule->>'type' = p_type
    AND NOT EXISTS (
      SELECT 1 FROM jsonb_each(coalesce(r.rule->'filters', '{}'::jsonb)) AS f(k, want)
      WHERE NOT coalesce(p_properties ? f.k AND CASE
          WHEN jsonb_typeof(f.want) = 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements(f.want) AS w(v) WHERE w.v = p_properties->f.k)
          ELSE f.want = p_properties->f.k
        END, false)
    )
  ORDER BY r.n
  LIMIT 1
$$;
--> statement-breakpoint
-- Σ over graduated tiers of what a count of p_x units costs from zero: each unit at its tier's
-- unit_amount, a tier's flat_amount once the count enters it.
CREATE OR REPLACE FUNCTION rate_card_graduated(p_tiers jsonb, p_x numeric)
RETURNS numeric
LANGUAGE plpgsql
IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
  t jsonb;
  total numeric := 0;
  lower_bound numeric := 0;
  upper_bound numeric;
BEGIN
  FOR t IN SELECT value FROM jsonb_array_elements(p_tiers) LOOP
    EXIT WHEN p_x <= lower_bound;
    upper_bound := (t->>'up_to')::numeric;
    total := total + (CASE WHEN upper_bound IS NULL OR p_x < upper_bound THEN p_x ELSE upper_bound END - lower_bound) * (t->>'unit_amount')::numeric
      + coalesce((t->>'flat_amount')::numeric, 0);
    EXIT WHEN upper_bound IS NULL;
    lower_bound := upper_bound;
  END LOOP;
  RETURN total;
END
$$;
--> statement-breakpoint
-- Prices rule p_index of p_rules for p_quantities; p_used maps "<rule>.<component>" to the
-- account's graduated count so far (NULL: none). Answers
-- {"rule", "denomination", "amount", "components": [{"quantity", "amount"}], "graduated"}, amounts
-- as exact decimal strings, each component rounded half up to 12 decimals.
CREATE OR REPLACE FUNCTION rate_card_price(p_rules jsonb, p_index integer, p_quantities jsonb, p_used jsonb)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
  rule jsonb := p_rules->p_index;
  c jsonb;
  j integer := 0;
  q numeric;
  used numeric;
  amt numeric;
  size numeric;
  tier jsonb;
  total numeric := coalesce((rule->>'amount')::numeric, 0);
  parts jsonb := '[]'::jsonb;
  graduated boolean := false;
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(coalesce(rule->'components', '[]'::jsonb)) LOOP
    q := coalesce((p_quantities->>(c->>'quantity'))::numeric, 0);
    IF c ? 'unit_amount' THEN
      amt := q * (c->>'unit_amount')::numeric;
    ELSIF c ? 'package' THEN
      size := (c->'package'->>'size')::numeric;
      amt := (div(q, size) + CASE WHEN mod(q, size) > 0 THEN 1 ELSE 0 END) * (c->'package'->>'amount')::numeric;
    ELSIF c->>'tiers_mode' = 'graduated' THEN
      graduated := true;
      used := coalesce((p_used->>(p_index::text || '.' || j::text))::numeric, 0);
      amt := rate_card_graduated(c->'tiers', used + q) - rate_card_graduated(c->'tiers', used);
    ELSIF q = 0 THEN
      amt := 0;
    ELSE
      SELECT value INTO tier FROM jsonb_array_elements(c->'tiers') WITH ORDINALITY AS x(value, n)
        WHERE x.value->>'up_to' IS NULL OR q <= (x.value->>'up_to')::numeric ORDER BY x.n LIMIT 1;
      amt := q * (tier->>'unit_amount')::numeric + coalesce((tier->>'flat_amount')::numeric, 0);
    END IF;
    amt := round(amt, 12);
    total := total + amt;
    parts := parts || jsonb_build_array(jsonb_build_object('quantity', trim_scale(q)::text, 'amount', trim_scale(amt)::text));
    j := j + 1;
  END LOOP;
  RETURN jsonb_build_object('rule', p_index, 'denomination', rule->>'denomination', 'amount', trim_scale(total)::text, 'components', parts, 'graduated', graduated);
END
$$;
--> statement-breakpoint
-- An event priced by a plan's rules: rate_card_price of the rule rate_card_match picks; NULL when none.
CREATE OR REPLACE FUNCTION rate_card_event(p_rules jsonb, p_type text, p_quantities jsonb, p_properties jsonb, p_used jsonb)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT rate_card_price(p_rules, i, p_quantities, p_used) FROM (SELECT rate_card_match(p_rules, p_type, coalesce(p_properties, '{}'::jsonb)) AS i) m WHERE m.i IS NOT NULL
$$;
--> statement-breakpoint
-- The start of the spend period p_period ('day', 'week': ISO, from Monday; 'month') holding p_at, in UTC.
CREATE OR REPLACE FUNCTION spend_period_start(p_period text, p_at timestamptz)
RETURNS timestamptz
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT date_trunc(p_period, p_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
$$;
--> statement-breakpoint
-- A balance's spend limits with what completed events cost in each one's period so far (the live
-- holds are the caller's to add). VOLATILE, like live_pending: called on a locked balance row, it
-- reads with a fresh snapshot, so counters moved by a transaction the lock waited for count.
CREATE OR REPLACE FUNCTION spend_state(p_account_id text, p_denomination text, p_at timestamptz)
RETURNS TABLE (period text, action text, limit_amount numeric, period_start timestamptz, spent numeric)
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
  RETURN QUERY
    SELECT l.period, l.action, l.limit_amount, spend_period_start(l.period, p_at),
      coalesce((SELECT c.spent FROM spend_counters c WHERE c.account_id = l.account_id AND c.denomination = l.denomination
        AND c.period = l.period AND c.period_start = spend_period_start(l.period, p_at)), 0)
    FROM spend_limits l
    WHERE l.account_id = p_account_id AND l.denomination = p_denomination;
END
$$;
