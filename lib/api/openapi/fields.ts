/**
 * Words for the request fields. The zod request schemas carry types and limits; what a field
 * means lives here so the schema files stay about validation. Keys are `Component.path`
 * (`PlanCreate.balances[].amount`) or, for a field that means the same everywhere, its name.
 * The test fails when a request field has no description.
 */
export const FIELD_DOCS: Record<string, string> = {
  // Shared meanings.
  name: 'Display name.',
  email: 'Email address.',
  metadata: 'Arbitrary JSON object, at most 16 KiB, returned as sent. A number a 64-bit float cannot hold exactly (such as 12345678901234567 or 1e400) is refused with 400: send it as a string.',
  plan_id: 'Plan id (`p_...`).',
  plan_variable_amounts:
    "For a plan with variable balances: balance denomination → chosen included amount. The period charge becomes charge_amount + Σ (chosen − included) × variable_unit_price, rounded half up to whole cents, never below 0.",
  token: 'Card token from the payment processor\'s client-side card element (tok_...); becomes the default payment method.',
  billing_address_id: 'Free-form billing address reference; null clears it.',
  external_id:
    "The company's own id for this customer, at most 255 characters, kept exactly as sent; unique within the company (another account's id is 409 `conflict` with `param: \"external_id\"`). Find the account by it with `GET /v1/companies/{company_id}/accounts?external_id=...`.",
  'AccountUpdate.external_id': "Sets the company's own id for this customer (unique within the company: 409 `conflict` when another account has it); null or an empty string clears it.",
  denomination: 'Balance denomination.',
  reason: 'Why the units are granted; recorded on the ledger entry.',
  url: 'Absolute http or https URL the service POSTs deliveries to, at most 2048 bytes (UTF-8); no credentials in it, and a public host (loopback, private, link-local and other non-public addresses are refused).',
  username: 'HTTP Basic username sent with every delivery (no colon); null for none.',
  password: 'HTTP Basic password sent with every delivery; needs a username; null for none.',

  'PortalLinkCreate.expires_in': 'Seconds the link works, 300 (5 minutes) to 86400 (24 hours); 86400 when left out. Make it as short as the customer needs: anyone holding the link sees the account and can replace its card until then (or until it is revoked).',

  'AccountCreate.name': 'Name of the customer.',
  'AccountCreate.email': 'Email address of the customer.',
  'AccountCreate.processor_id': 'Existing payment processor customer id (cus_...). If omitted, the service creates a processor customer.',
  'AccountCreate.plan_id': 'Plan to attach at once: creates all its balances and starts billing. A plan with a charge needs token, a processor_id with a default card, or enable_card_collector (otherwise 402 payment_method_required).',
  'AccountCreate.enable_card_collector':
    'true (or 1) asks for a one-time hosted card form; its link comes back as card_collector_url and the plan is attached only when the form is completed.',
  'AccountUpdate.name': 'New name of the customer.',
  'AccountUpdate.email': 'New email address of the customer.',
  'AccountUpdate.metadata': 'Replaces the metadata object.',

  'PlanChange.plan_id': 'The new plan. A higher (or equal) period charge is an upgrade, at once and prorated; a cheaper plan is a downgrade scheduled for the next renewal.',

  'BalanceCreate.amount': 'Units to grant on top of the balance (optional); send an Idempotency-Key to make a retry safe.',

  'DepositRequest.denomination': 'Balance to credit.',
  'DepositRequest.charge_against_denomination': 'Synonym of denomination.',
  'DepositRequest.amount_to_deposit': 'Units to add.',
  'DepositRequest.expires_at': 'When what is left of the deposited units expires (optional; never by default). Must be in the future.',
  'DepositRequest.priority': 'Draw priority of the deposited units, 0 to 100 (lower is spent first; default 50).',

  'GrantCreate.amount': 'Units to grant (greater than 0).',
  'GrantCreate.category': 'promotional (the default: given) or paid (bought outside this service).',
  'GrantCreate.priority': '0 to 100; lower is spent first (default 50).',
  'GrantCreate.effective_at': 'When the units start to count (optional; now by default).',
  'GrantCreate.expires_at': 'When what is left expires (optional; never by default). Must be in the future and after effective_at.',
  'GrantCreate.reason': 'Shown on the grant and its ledger entry.',
  'DepositRequest.amount_to_charge': 'USD cents charged to the card first; 0 (the default) makes a free grant. Otherwise at least 50 (the smallest card payment).',

  'AutoRefillRequest.amount': 'Units added per refill.',
  'AutoRefillRequest.usd_charge': 'Charged to the card per refill: 0 (free) or at least 50 cents.',
  'AutoRefillRequest.refill_period':
    'monthly: refill on the same day each month from today (after the 28th: the 1st of the second following month, then the 1st); the first refill happens at once.',
  'AutoRefillRequest.threshold': 'Refill each time the balance drops below this.',
  'AutoRefillRequest.expires_after_days': 'Days (1 to 3650) after each refill that the paid grant it makes expires (optional; never by default).',
  'AutoRefillRequest.max_charges_per_month': 'With threshold: at most this many threshold refills (1 to 1000) are charged per calendar month (UTC); past it none is, and `refill_limit_reached` is sent once that month (optional; no limit by default).',

  'SpendLimitInput.denomination': 'The denomination whose spend is limited.',
  'SpendLimitInput.period': '`day` (UTC calendar day), `week` (ISO week, from Monday 00:00 UTC) or `month` (calendar month).',
  'SpendLimitInput.limit': 'The most the period may spend, in units (0 or more).',
  'SpendLimitInput.action': '`reject`: an event that would pass the limit is rejected with `reason: "spend_limit"`; `notify`: passing it sends `spend_limit_reached` once per period.',

  'RefillChangeRequest.denomination': 'Balance whose monthly refill changes at its next refill.',
  'RefillChangeRequest.amount': 'Units per refill from the next refill on.',
  'RefillChangeRequest.usd_charge': 'Charge per refill from the next refill on: 0 (free) or at least 50 cents.',
  'RefillChangeRequest.refill_period': '`monthly` (the only period, validated as on the balance\'s own auto_refill path; may be left out): the monthly refill is what changes.',

  'MidMonthRequest.account_id': 'Optional; must equal the path account_id.',
  'MidMonthRequest.denomination': 'Balance whose monthly refill increases now.',
  'MidMonthRequest.amount': 'New units per month; must be more than the current refill_amount.',
  'MidMonthRequest.usd_charge': 'New monthly charge (0, or at least 50 cents); remaining units are cancelled and their value at the old unit price comes off it. What is left to pay, when below 50 cents, is not charged now: it is carried to the next renewal charge.',

  type: 'Kind of event, chosen by the caller; plan billing rules match on it. Types without a rule are accepted and not billed.',
  cost_override: 'Replaces automatic pricing (batch form).',
  'cost_override.amount': 'Cost in units.',
  'cost_override.denomination': 'Balance to charge.',
  cost_override_amount: 'Replaces automatic pricing together with cost_override_denomination (per-account form).',
  cost_override_denomination: 'Balance to charge; pairs with cost_override_amount.',
  state: 'pending holds the cost (reflected in available) until completed or cancelled, or for one hour; complete (default; completed is a synonym) charges at once.',
  gate_on_balance: 'When true and the cost exceeds the available balance, the event is recorded as rejected and nothing is charged (402 on the per-account endpoint; state rejected in a batch).',
  idempotency_key: 'A repeat with the same key within the company returns the first record and charges nothing.',
  account_id: 'Account the event belongs to (`a_...`).',

  'EventTransition.state': 'complete (or completed) charges the held cost; cancelled (or canceled) releases it.',

  'PlanCreate.name': 'Plan name.',
  'PlanCreate.charge_amount': 'Charge per billing period: 0 (free) or at least 50 cents, the smallest card payment.',
  'PlanCreate.charge_denomination': 'Only USD (any case).',
  'PlanCreate.billing_period': 'day, week, month (default) or year; daily, weekly, monthly, yearly, annual, annually and any case are accepted.',
  'PlanCreate.overage_charge_mode': 'postpay: units below zero are billed at renewal at overage_charge_amount; none: not billed.',
  'PlanCreate.threshold_alert_percentage': 'Usage percentage (above 0, at most 100) of an included balance that fires the threshold webhook; null for none.',
  'PlanCreate.balances': 'Balances the plan creates; each is reset to its amount at every renewal (no rollover).',
  'PlanCreate.balances[].amount': 'Units included per period.',
  'PlanCreate.balances[].denomination': 'Balance denomination; one entry per denomination.',
  'PlanCreate.balances[].overage_charge_amount': 'Charge per unit below zero at renewal (postpay).',
  'PlanCreate.balances[].overage_charge_denomination': 'Only USD (any case).',
  'PlanCreate.balances[].variable_unit_price': 'USD cents per unit (may have decimals); makes the included amount choosable per account with plan_variable_amounts.',
  'PlanCreate.billing_rules': 'Price of each event type; one rule per type.',
  'PlanCreate.billing_rules[].type': 'Event type the rule prices.',
  'PlanCreate.billing_rules[].amount': 'Cost of one event.',
  'PlanCreate.billing_rules[].denomination': 'Balance charged.',
  'PlanCreate.flags': 'Feature flags (name → boolean) copied to the accounts on the plan.',

  'WebhookUpdate.url': 'New target URL, at most 2048 bytes (UTF-8).',
  'WebhookTypeRegistration.type': 'Event type to deliver; one url may be registered for several types.',
  'WebhookTypeRegistration.url': 'Absolute http or https URL the service POSTs deliveries to, at most 2048 bytes (UTF-8), with a public host.',

  'CompanyCreate.name': 'Company name.',
  'CompanyCreate.email': 'Contact email of the company.',
  'CompanyCreate.processor_key': "The company's Stripe secret (sk_...) or restricted (rk_...) key; needs write access to customers, payment intents and payment methods. Stored encrypted.",
  'CompanyCreate.processor_publishable_key': 'Stripe publishable key (pk_...) for the hosted card collector.',
  'CompanyCreate.password': "Console owner's sign-in password (12 to 200 characters).",

  'CompanyUpdate.portal_topups': 'The credit packages the customer portal offers, replacing the list; [] offers none. At most 10.',
  'CompanyUpdate.portal_topups[].denomination': 'Balance the package credits.',
  'CompanyUpdate.portal_topups[].amount_to_deposit': 'Units the package adds.',
  'CompanyUpdate.usage_properties': 'Event properties usage is rolled up by, replacing the list; [] none. At most 5 names of 1 to 100 characters, each once.',
  'CompanyUpdate.portal_topups[].amount_to_charge': 'USD cents charged to the card on file: at least 50 ($0.50), at most 99999999.',

  'TestClockAdvance.seconds': 'Seconds to move the clock forward; 0 runs everything already due.',
};

/** Query parameters, by name. */
export const QUERY_DOCS: Record<string, string> = {
  limit: 'Page size: 1 to 1000, default 100 (more is 400).',
  starting_after: 'Cursor: return items after (older than) this id, taken from the last item of the previous page or the Link header.',
  email: 'Only accounts with exactly this email.',
  external_id: 'Only the account with exactly this external_id (at most one: the lookup of a customer by your own id).',
  search: 'Case-insensitive part of the name, email or external_id, or an exact account id.',
  denomination: 'Only entries of this balance.',
  account_id: 'Only events of this account.',
  type: 'Only events of this type.',
  state: 'Only events in this state (rejected included).',
  created_gte: 'Only events created at or after this time (ISO 8601 with offset).',
  created_lt: 'Only events created before this time (ISO 8601 with offset).',
  properties: 'properties[key]=value: only events whose property key has this value (numbers and booleans as JSON writes them); several must all match.',
  status: 'Only deliveries in this status.',
  from: 'Start of the window, included (ISO 8601 with offset; 30 days before to by default).',
  to: 'End of the window, excluded (ISO 8601 with offset; by default just after now, so now is included). At most 400 days after from.',
  granularity: 'Size of each bucket: hour, day (default) or month, in UTC.',
  group_by: 'type (default): one row per event type; property:<name>: one row per value of that property (null for events without it); fast for the company\'s usage_properties, read from the events for any other.',
};

/** Type-level words for the shared pieces of lib/api/schemas/common.ts. */
export const TYPE_DOCS = {
  units: 'Units: a JSON number or a numeric string, at most 12 decimals (NaN, Infinity and 1e400 are rejected). Numbers are read exactly as written, however many digits.',
  nonNegativeUnits: 'Units: a JSON number or a numeric string, at most 12 decimals, not negative.',
  positiveUnits: 'Units: a JSON number or a numeric string, at most 12 decimals, greater than 0.',
  cents: 'USD cents: a non-negative integer (a numeric string such as "2500" is accepted).',
  chargeCents: 'USD cents charged to a card: 0 (free), or an integer from 50 ($0.50, the smallest card payment) to 99999999 ($999,999.99, the most one card payment can be); a numeric string such as "2500" is accepted.',
  priceCents: 'USD cents: a non-negative integer, at most 99999999 ($999,999.99, the most one card payment can be; a numeric string such as "2500" is accepted).',
};
