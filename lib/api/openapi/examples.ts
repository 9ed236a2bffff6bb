import type { ErrorType } from '../../errors';

/**
 * Example records for the document. The test parses each one with its response schema, so an
 * example that drifts from the serializers fails like a real response would.
 */
export const IDS = {
  company: 'c_01jq3v5zq8x7m2k4n6p8r0t2v4',
  account: 'a_01jq3v6b2c4d6f8g0h2j4k6m8n',
  plan: 'p_01jq3v6a1b3c5d7e9f1g3h5j7k',
  planSmall: 'p_01jq3v6a1b3c5d7e9f1g3h5j7m',
  balance: 'b_01jq3v6c3d5e7f9g1h3j5k7m9n',
  event: 'ev_01jq3v7d4e6f8g0h2j4k6m8n0p',
  event2: 'ev_01jq3v7d4e6f8g0h2j4k6m8n0q',
  transaction: 'tx_01jq3v7e5f7g9h1j3k5m7n9p1q',
  grant: 'cg_01jq3v6c3d5e7f9g1h3j5k7m9p',
  charge: 'ch_01jq3v6d4e6f8g0h2j4k6m8n0p',
  key: 'key_01jq3v5zq8x7m2k4n6p8r0t2v5',
  portalLink: 'pl_01jq3v6e5f7g9h1j3k5m7n9p1q',
  webhook: 'w_01jq3v8f6g8h0j2k4m6n8p0q2r',
  delivery: 'whd_01jq3v9g7h9j1k3m5n7p9q1r3s_5f3a9c1e',
  attempt: 'wha_01jq3v9h8j0k2m4n6p8q0r2s4t',
  request: 'req_Vx3kQ9mZt2LwR8bN5cYd',
} as const;

const T0 = '2027-03-10T12:00:00.000Z';
const T1 = '2027-03-10T12:05:00.000Z';

export const paymentMethodExample = { id: 'pm_1QxYz2AbCdEfGhIjKlMnOpQr', brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030 };

export const accountExample = {
  id: IDS.account,
  name: 'Ada Lovelace',
  email: 'ada@example.com',
  external_id: 'cus-8812',
  company_id: IDS.company,
  plan_id: IDS.plan,
  plan_renewal_cadence: 'MONTHLY',
  billing_address_id: null,
  processor_id: 'cus_RkX2dY8pQ3mZ1a',
  created_at: T0,
  updated_at: null,
  metadata: { crm_id: '8812' },
  last_plan_renewal: T0,
  next_plan_renewal: '2027-04-10T12:00:00.000Z',
  plan_status: 'ACTIVE',
  flags: [{ name: 'priority_support', enabled: true }],
  plan_variable_amounts: null,
  scheduled_plan_id: null,
  scheduled_plan_variable_amounts: null,
  payment_method: paymentMethodExample,
};

export const accountWithCollectorExample = {
  ...accountExample,
  plan_status: 'PENDING_PAYMENT_METHOD',
  plan_id: null,
  last_plan_renewal: null,
  next_plan_renewal: null,
  flags: [],
  payment_method: null,
  card_collector_url: 'https://billing.example.com/collect/cl_5xKq2Vw9RtYb3NmZ8pLd4HfJ',
};

export const balanceExample = {
  id: IDS.balance,
  account_id: IDS.account,
  denomination: 'credits',
  amount: 995.5,
  pending: 2,
  available: 993.5,
  refill_threshold: 0,
  refill_amount: 1000,
  refill_usd_amount: 2500,
  refill_on_day: '10',
  last_periodic_refill: T0,
  next_periodic_refill: '2027-04-10T00:00:00.000Z',
  refill_expires_after_days: null,
  refill_max_charges_per_month: null,
  scheduled_refill_change: null,
  managed_by_plan_id: null,
  next_expiry: { expires_at: '2027-04-10T00:00:00.000Z', amount: 200 },
  created_at: T0,
  updated_at: T1,
};

export const newBalanceExample = {
  ...balanceExample,
  amount: 0,
  pending: 0,
  available: 0,
  refill_amount: 0,
  refill_usd_amount: 0,
  refill_on_day: '',
  last_periodic_refill: null,
  next_periodic_refill: null,
  refill_expires_after_days: null,
  refill_max_charges_per_month: null,
  next_expiry: null,
  updated_at: null,
};

export const transactionExample = {
  id: IDS.transaction,
  account_id: IDS.account,
  denomination: 'credits',
  type: 'event',
  description: 'Event query',
  amount: -4.5,
  starting_balance: 1000,
  ending_balance: 995.5,
  event_id: IDS.event,
  charge_id: null,
  grant_id: IDS.grant,
  created_at: T1,
};

export const grantExample = {
  id: IDS.grant,
  account_id: IDS.account,
  denomination: 'credits',
  amount: 200,
  remaining: 200,
  category: 'promotional',
  source: 'grant',
  priority: 10,
  status: 'live',
  effective_at: T0,
  expires_at: '2027-04-10T00:00:00.000Z',
  cost_basis: null,
  charge_id: null,
  description: 'Launch week bonus',
  voided_at: null,
  created_at: T0,
};

export const eventExample = {
  id: IDS.event,
  account_id: IDS.account,
  type: 'query',
  state: 'complete',
  cost: { amount: 4.5, denomination: 'credits' },
  held_cost: null,
  pricing: { rule: 0, components: [] },
  quantities: {},
  properties: { region: 'eu' },
  reason: null,
  priced_by: 'plan',
  gate_on_balance: false,
  metadata: { query_id: 'q_991' },
  idempotency_key: null,
  created_at: T1,
  updated_at: null,
  expires_at: null,
};

export const pendingEventExample = {
  ...eventExample,
  id: IDS.event2,
  state: 'pending',
  cost: { amount: 2, denomination: 'credits' },
  held_cost: { amount: 2, denomination: 'credits' },
  pricing: null,
  priced_by: 'override',
  expires_at: '2027-03-10T13:05:00.000Z',
};

export const planExample = {
  id: IDS.plan,
  company_id: IDS.company,
  name: 'Pro',
  charge_amount: 4900,
  charge_denomination: 'USD',
  billing_period: 'month',
  overage_charge_mode: 'postpay',
  threshold_alert_percentage: '80',
  balances: [{ amount: 1000, denomination: 'credits', overage_charge_amount: 2, overage_charge_denomination: 'USD', variable_unit_price: null }],
  billing_rules: [{ type: 'query', amount: 4.5, denomination: 'credits' }],
  flags: { priority_support: true },
  metadata: {},
  created_at: T0,
  updated_at: null,
};

export const chargeExample = {
  id: IDS.charge,
  account_id: IDS.account,
  amount: 4900,
  currency: 'usd',
  reason: 'plan_start',
  description: 'Plan Pro',
  status: 'succeeded',
  processor_payment_intent_id: 'pi_3QxYz2AbCdEfGhIj',
  failure_code: null,
  failure_message: null,
  created_at: T0,
  updated_at: T0,
};

export const companyExample = {
  id: IDS.company,
  name: 'Acme Analytics',
  email: 'billing@acme.example',
  processor_configured: true,
  processor_publishable_key: 'pk_test_51AcmeExample',
  portal_topups: [{ denomination: 'credits', amount_to_deposit: 1000, amount_to_charge: 1000 }],
  usage_properties: ['model'],
  created_at: T0,
};

export const apiKeyExample = { id: IDS.key, last4: 'q7Xw', created_at: T0, last_used_at: T1, revoked_at: null };

export const webhookExample = {
  id: IDS.webhook,
  company_id: IDS.company,
  url: 'https://hooks.acme.example/billing',
  username: 'billing',
  password: 's3cret-pass',
  style: 'topic',
  topics: ['pause_balance', 'negative_balance'],
  created_at: T0,
  updated_at: null,
};

export const webhookSecretExample = 'whsec_MfKQ9r8GKYqXPFHHk2d5Zm8y3WzQw4bT1aJ0kVn7sU0=';

export const payloadByTypeExample = {
  company_id: IDS.company,
  callback_id: IDS.delivery,
  account_id: IDS.account,
  type: 'negative_balance',
  account_balance: -4.5,
  account_denomination: 'credits',
};

export const payloadByTopicExample = {
  webhook_id: IDS.webhook,
  topic: 'pause_balance',
  account_id: IDS.account,
  denomination: 'credits',
  balance: '-4.5',
};

export const deliveryExample = {
  id: IDS.delivery,
  webhook_id: IDS.webhook,
  topic: 'pause_balance',
  account_id: IDS.account,
  denomination: 'credits',
  status: 'succeeded',
  attempts: 1,
  next_attempt_at: null,
  created_at: T1,
  updated_at: T1,
  payload: payloadByTopicExample,
  attempts_log: [{ id: IDS.attempt, response_status: 200, error: null, duration_ms: 42, created_at: T1 }],
};

/** One example error body per type, in the order of decisions.md. */
export const ERROR_EXAMPLES: Record<ErrorType, { summary: string; error: Record<string, unknown> }> = {
  invalid_request: {
    summary: 'A field is missing or malformed; param names it',
    error: { type: 'invalid_request', message: 'name is required.', param: 'name' },
  },
  unauthorized: {
    summary: 'Missing or wrong credentials',
    error: { type: 'unauthorized', message: 'Invalid company id or API key.', param: null },
  },
  insufficient_balance: {
    summary: 'A gated event lacks available balance',
    error: {
      type: 'insufficient_balance',
      message: 'This event costs 4.5 credits, more than the balance has available; it was recorded as rejected and nothing was charged.',
      param: null,
      rejected_event_id: IDS.event,
    },
  },
  spend_limit_exceeded: {
    summary: "An event would take the account's spend past a reject limit",
    error: {
      type: 'spend_limit_exceeded',
      message: "This event costs 4.5 credits, which would take the account's spend past its limit; it was recorded as rejected and nothing was charged.",
      param: null,
      rejected_event_id: IDS.event,
    },
  },
  payment_method_required: {
    summary: 'A chargeable plan without a card, token or collector',
    error: {
      type: 'payment_method_required',
      message: 'Plan Pro charges 4900 cents per period: send a card token, a processor_id whose customer has a default card, or enable_card_collector.',
      param: 'token',
    },
  },
  card_declined: {
    summary: 'The processor refused a charge the call needed at once',
    error: { type: 'card_declined', message: 'The card was declined.', param: null, decline_code: 'generic_decline' },
  },
  not_found: {
    summary: 'No such resource for this company',
    error: { type: 'not_found', message: 'No such account.', param: 'account_id' },
  },
  conflict: {
    summary: 'Illegal state transition, or an Idempotency-Key reused with a different body',
    error: { type: 'conflict', message: 'This Idempotency-Key was already used with a different request.', param: null },
  },
  link_expired: {
    summary: 'A card collector or portal link that expired, was revoked, or was spent by 5 failed card attempts (those pages only)',
    error: { type: 'link_expired', message: 'This link can no longer be used: 5 card attempts through it failed. Ask Acme AI for a new link.', param: null },
  },
  payload_too_large: {
    summary: 'Body over 1 MiB, or a batch over 1000 events',
    error: { type: 'payload_too_large', message: 'Request bodies are limited to 1 MiB.', param: null },
  },
  unsupported_media_type: {
    summary: 'A body that is not application/json',
    error: { type: 'unsupported_media_type', message: 'Send request bodies as JSON with Content-Type: application/json.', param: null },
  },
  rate_limited: {
    summary: "Over the company's request rate; see Retry-After",
    error: { type: 'rate_limited', message: 'Too many requests: the limit is 5000 per second.', param: null },
  },
  internal: {
    summary: 'Our failure; never a stack trace or SQL text',
    error: { type: 'internal', message: 'Something went wrong on our side. Retry later; quote the request id if it persists.', param: null },
  },
  processor_error: {
    summary: 'The payment processor failed or timed out; a charge whose outcome is unknown stays pending',
    error: {
      type: 'processor_error',
      message: `The payment processor did not confirm charge ${IDS.charge} in time. Its outcome is settled automatically: what it pays for is granted only if it was paid, and a retry with the same Idempotency-Key never charges twice.`,
      param: null,
      charge_id: IDS.charge,
      charge_pending: true,
    },
  },
  service_unavailable: {
    summary: 'Not ready: the database does not answer, migrations are not applied, or the process is shutting down',
    error: { type: 'service_unavailable', message: 'The service is shutting down.', param: null },
  },
};

export const errorExampleBody = (type: ErrorType) => ({ error: { ...ERROR_EXAMPLES[type].error, request_id: IDS.request } });

/** A downgrade: scheduled for the next renewal, nothing charged now, balances as they are. */
export const planChangePreviewExample = {
  plan_id: IDS.planSmall,
  effective: 'next_renewal',
  charge_amount: 0,
  carried_amount: 0,
  credit_amount: 0,
  overage_amount: 0,
  next_plan_renewal: accountExample.next_plan_renewal,
  balances: [{ denomination: 'credits', amount: 412, managed_by_plan_id: IDS.plan }],
};

export const usageExample = [
  { start: '2026-03-01T00:00:00.000Z', group: 'query', denomination: 'credits', events: 1204, cost: 5418, quantities: { input_tokens: 981220, output_tokens: 402117 } },
  { start: '2026-03-01T00:00:00.000Z', group: 'upload', denomination: 'credits', events: 37, cost: 92.5, quantities: {} },
  { start: '2026-03-02T00:00:00.000Z', group: 'query', denomination: 'credits', events: 1388, cost: 6246, quantities: { input_tokens: 1120483, output_tokens: 455210 } },
];

export const spendLimitExample = {
  denomination: 'credits',
  period: 'day' as const,
  limit: 50,
  action: 'reject' as const,
  spent: 12.5,
  period_start: '2026-03-14T00:00:00.000Z',
  period_end: '2026-03-15T00:00:00.000Z',
};
