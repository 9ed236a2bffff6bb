import { z } from 'zod';
import { TOPICS } from '../../billing/webhooks/topics';
import { STATUS, type ErrorType } from '../../errors';

/**
 * Response records, written from the serializers (serializeAccount, serializeBalance, ...).
 * They are strict on purpose: the test runs real calls through the route handlers and checks
 * every body against the document built from these, so a field added to a serializer without
 * a line here fails the suite instead of going undocumented.
 */

const idPattern = (prefix: string) => z.string().regex(new RegExp(`^${prefix}_[A-Za-z0-9${prefix === 'whd' ? '_' : ''}]+$`));
const prefixed = (prefix: string, what: string) => idPattern(prefix).describe(`${what} (starts with \`${prefix}_\`).`);
const maybePrefixed = (prefix: string, what: string) => idPattern(prefix).nullable().describe(`${what} (starts with \`${prefix}_\`), or null.`);
const timestamp = (what: string) => z.iso.datetime().describe(`${what} (ISO 8601, UTC).`);
const maybeTimestamp = (what: string) => z.iso.datetime().nullable().describe(`${what} (ISO 8601, UTC), or null.`);
const unitsNumber = (what: string) => z.number().describe(`${what} Units are JSON numbers rendered from exact decimals.`);
const usdCents = (what: string) => z.int().nonnegative().describe(`${what} USD cents, a non-negative integer.`);
const metadataOut = z.record(z.string(), z.unknown()).describe('Arbitrary JSON object supplied by the caller.');
const decimalMap = (what: string) =>
  z.record(z.string(), z.number()).nullable().describe(`${what} Balance denomination → chosen included amount (units: a JSON number rendered from the exact decimal); null when none.`);

export const paymentMethod = z
  .strictObject({
    id: z.string().describe('Payment processor payment method id (pm_...).'),
    brand: z.string().describe('Card brand, for example visa.'),
    last4: z.string().describe('Last four digits of the card number.'),
    exp_month: z.int().describe('Expiry month, 1-12.'),
    exp_year: z.int().describe('Expiry year, four digits.'),
  })
  .describe("The account's default card, as stored after the processor accepted it.");

export const account = z
  .strictObject({
    id: prefixed('a', 'Account id'),
    name: z.string().describe('Name of the customer.'),
    email: z.string().describe('Email address of the customer.'),
    external_id: z.string().nullable().describe("The company's own id for this customer (unique within the company), or null."),
    company_id: prefixed('c', 'Owning company id'),
    plan_id: maybePrefixed('p', 'Current plan id'),
    plan_renewal_cadence: z
      .enum(['DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY'])
      .describe("The plan's billing_period as an uppercase word; MONTHLY when the account has no plan."),
    billing_address_id: z.string().nullable().describe('Free-form billing address reference, or null.'),
    processor_id: z.string().nullable().describe('Payment processor (Stripe) customer id; null only when the company has no processor key.'),
    created_at: timestamp('When the account was created'),
    updated_at: maybeTimestamp('Last change'),
    metadata: metadataOut,
    last_plan_renewal: maybeTimestamp('Start of the current plan period'),
    next_plan_renewal: maybeTimestamp('When the plan renews next'),
    plan_status: z
      .enum(['NONE', 'PENDING_PAYMENT_METHOD', 'ACTIVE', 'PAST_DUE', 'CANCELLED'])
      .describe('NONE: no plan. PENDING_PAYMENT_METHOD: waiting for the card collector. ACTIVE. PAST_DUE: a renewal charge failed. CANCELLED.'),
    flags: z
      .array(z.strictObject({ name: z.string().describe('Flag name.'), enabled: z.boolean().describe('Whether the flag is on.') }))
      .describe("Feature flags copied from the plan's flags."),
    plan_variable_amounts: decimalMap('Chosen amounts of the plan\'s variable balances.'),
    scheduled_plan_id: maybePrefixed('p', 'Plan that takes over at the next renewal (a scheduled downgrade)'),
    scheduled_plan_variable_amounts: decimalMap('Chosen amounts that come with the scheduled plan.'),
    payment_method: paymentMethod.nullable().describe('The default card, or null.'),
    card_collector_url: z
      .url()
      .optional()
      .describe('One-time link to the hosted card form; only in the response to a create call with enable_card_collector.'),
  })
  .describe('A customer of the company.');

export const scheduledRefillChange = z
  .strictObject({
    amount: unitsNumber('Units the refill will add.'),
    usd_charge: usdCents('Charge of the changed refill.'),
    effective_at: timestamp('When the change takes effect: the next monthly refill'),
  })
  .describe('A refill change waiting for the next monthly refill.');

const balanceFields = {
  id: prefixed('b', 'Balance id'),
  account_id: prefixed('a', 'Account id'),
  denomination: z.string().describe('Unit name of the balance, for example credits or compute-minute.'),
  amount: unitsNumber('Amount held.'),
  pending: unitsNumber('Amount reserved by live pending events.'),
  available: unitsNumber('amount minus pending: what a gated event may spend.'),
  refill_threshold: unitsNumber('Threshold of the threshold refill; 0 when there is none.'),
  refill_amount: unitsNumber('Units added per refill; 0 when there is no refill.'),
  refill_usd_amount: usdCents('Charged per refill.'),
  refill_on_day: z.string().describe('Day of month of the monthly refill ("1" to "28", "10", ...); empty when there is none.'),
  last_periodic_refill: maybeTimestamp('Last monthly refill'),
  next_periodic_refill: maybeTimestamp('Next monthly refill'),
  refill_expires_after_days: z.number().int().nullable().describe('Days after each refill that the paid grant it makes expires; null: those grants never expire.'),
  refill_max_charges_per_month: z.number().int().nullable().describe('At most this many threshold refills are charged per calendar month (UTC); past it none is, and `refill_limit_reached` is sent once that month. null: no limit.'),
  scheduled_refill_change: scheduledRefillChange.nullable().describe('A change scheduled with PUT /v1/accounts/{account_id}/auto_refill, or null.'),
  managed_by_plan_id: maybePrefixed('p', 'Plan whose allowance this balance holds: it expires at each period end and the next one is granted'),
  next_expiry: z
    .strictObject({ expires_at: timestamp('When the soonest of the live grants expires'), amount: unitsNumber('Units that expire then, if not spent first.') })
    .nullable()
    .describe('The soonest expiry among the live grants with units left, or null when none expires.'),
  created_at: timestamp('When the balance was created'),
  updated_at: maybeTimestamp('Last change'),
};
export const balance = z.strictObject(balanceFields).describe('What an account holds in one denomination.');

export const midMonthChange = z
  .strictObject({
    ...balanceFields,
    credit: usdCents('Value of the cancelled remaining units at the old unit price, taken off usd_charge.'),
    charged: usdCents('What was charged: usd_charge minus credit, never below 0.'),
  })
  .describe('The Balance after a mid-month increase, with the proration.');

export const scheduledRefill = z
  .strictObject({
    account_id: prefixed('a', 'Account id'),
    denomination: z.string().describe('The balance whose monthly refill changes.'),
    amount: unitsNumber('Units the refill will add.'),
    usd_charge: usdCents('Charge of the changed refill.'),
    effective_at: timestamp('When the change takes effect: the next monthly refill'),
  })
  .describe('A refill change scheduled for the next monthly refill.');

export const transaction = z
  .strictObject({
    id: prefixed('tx', 'Ledger entry id'),
    account_id: prefixed('a', 'Account id'),
    denomination: z.string().describe('Balance the entry changed.'),
    type: z.string().describe('Kind of change: event, grant, deposit, refill, plan_reset, refill_cancelled, ...'),
    description: z.string().describe('Human-readable reason.'),
    amount: unitsNumber('Signed change of the balance.'),
    starting_balance: unitsNumber('Balance before.'),
    ending_balance: unitsNumber('Balance after (starting_balance + amount).'),
    event_id: maybePrefixed('ev', 'Event that caused the change'),
    charge_id: maybePrefixed('ch', 'Charge that paid for the change'),
    grant_id: maybePrefixed('cg', 'Credit grant the entry made, drew from, expired or voided'),
    created_at: timestamp('When the entry was written'),
  })
  .describe('One ledger entry. For every balance, amount equals the sum of its entries.');

const costOut = z.strictObject({ amount: unitsNumber('Cost in units.'), denomination: z.string().describe('Balance charged.') });

const tierOut = z.strictObject({
  up_to: z.number().nullable().describe('Upper bound of the tier (inclusive); null on the last tier.'),
  unit_amount: unitsNumber('Price per unit in the tier.'),
  flat_amount: unitsNumber('Flat price of the tier (graduated: once the count enters it; volume: once per event).').optional(),
});

const componentOut = z
  .union([
    z.strictObject({ quantity: z.string().describe('Name of the quantity priced.'), unit_amount: unitsNumber('Price per unit.') }),
    z.strictObject({ quantity: z.string().describe('Name of the quantity priced.'), tiers_mode: z.enum(['graduated', 'volume']).describe('graduated: each unit at the tier it falls in, counted since the plan period began; volume: the whole quantity at the tier it reaches.'), tiers: z.array(tierOut).describe('Tiers in ascending order.') }),
    z.strictObject({ quantity: z.string().describe('Name of the quantity priced.'), package: z.strictObject({ size: unitsNumber('Units per package.'), amount: unitsNumber('Price per package begun.') }).describe('ceil(quantity / size) × amount.') }),
  ])
  .describe('One price of a rule: unit, tiered, or package.');

export const billingRuleOut = z.strictObject({
  type: z.string().describe('Event type.'),
  denomination: z.string().describe('Balance charged.'),
  amount: unitsNumber('Fixed price of each event (added to the components).'),
  filters: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number(), z.boolean()]))])).optional().describe('Property → value or values the event must carry for the rule to price it.'),
  components: z.array(componentOut).optional().describe('Prices by quantity, added to amount.'),
});
export const grant = z
  .strictObject({
    id: prefixed('cg', 'Credit grant id'),
    account_id: prefixed('a', 'Account id'),
    denomination: z.string().describe('Balance the grant adds to.'),
    amount: unitsNumber('Units granted.'),
    remaining: unitsNumber('Units not yet spent (0 once expired, voided or used up).'),
    category: z.enum(['paid', 'promotional']).describe('paid (bought) or promotional (given).'),
    source: z.enum(['plan', 'deposit', 'refill', 'grant']).describe("Where it came from: a plan period's allowance, a deposit, a refill, or the company."),
    priority: z.number().int().describe('0 to 100; lower is spent first.'),
    status: z.enum(['live', 'scheduled', 'used', 'expired', 'voided']).describe('live (units left), scheduled (effective_at still to come), used (nothing left), expired, voided.'),
    effective_at: timestamp('When its units count'),
    expires_at: maybeTimestamp('When what is left expires; null: never'),
    cost_basis: z.number().nullable().describe('USD cents paid per unit; null when nothing was paid for the units.'),
    charge_id: maybePrefixed('ch', 'Charge that paid for it'),
    description: z.string().describe('Why it was made.'),
    voided_at: maybeTimestamp('When it was voided'),
    created_at: timestamp('When it was made'),
  })
  .describe('Units added to a balance: drawn by priority, then soonest expiry (never-expiring last), then oldest.');

const split = (what: string) =>
  z.strictObject({ paid: unitsNumber(`${what}, paid units.`), promotional: unitsNumber(`${what}, promotional units.`) }).describe(`${what}, split by category.`);

export const creditsReport = z
  .strictObject({
    from: timestamp('Start of the window (included)'),
    to: timestamp('End of the window (excluded)'),
    denominations: z
      .array(
      z.strictObject({
        denomination: z.string().describe('Balance denomination.'),
        granted: split('Units granted'),
        spent: split('Units drawn from grants'),
        expired: split('Units that expired unspent'),
        voided: split('Units voided unspent'),
        expired_paid_cents: usdCents('What the paid units that expired had cost (units × cost basis, rounded half up): revenue of credit that will never be used.'),
      }),
      )
      .describe('One entry per denomination with any credit granted, spent, expired or voided in the window.'),
  })
  .describe("The company's credit over a window, per denomination.");

export const event = z
  .strictObject({
    id: prefixed('ev', 'Event id'),
    account_id: prefixed('a', 'Account id'),
    type: z.string().describe('Kind of event, chosen by the caller; plan billing rules match on it.'),
    state: z
      .enum(['pending', 'complete', 'cancelled', 'rejected'])
      .describe('pending (a hold, until expires_at), complete, cancelled, or rejected (refused by the balance gate or a spend limit; nothing charged).'),
    cost: costOut.nullable().describe('What the event costs (for a completed hold: what it settled at), or null when it is not billed.'),
    held_cost: costOut.nullable().describe('What a hold held when it was placed (kept after it completes or is cancelled); null for events that were never pending.'),
    pricing: z
      .strictObject({
        rule: z.int().describe("Index (0-based) of the plan's billing_rules entry that priced the event."),
        components: z
          .array(z.strictObject({ quantity: unitsNumber('The quantity the component priced.'), amount: unitsNumber('What the component charged.') }))
          .describe("Each of the rule's components, in order."),
      })
      .nullable()
      .describe("How the plan's rate card priced the event; null unless priced_by is plan."),
    quantities: z.record(z.string(), z.number()).describe('Usage the caller measured: name → quantity (units).'),
    properties: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).describe('Facts about the event that billing rule filters match on.'),
    reason: z.enum(['insufficient_balance', 'spend_limit']).nullable().describe('Why a rejected event was rejected; null otherwise.'),
    priced_by: z.enum(['override', 'plan', 'none']).describe('override: the caller stated the cost; plan: a billing rule of the account\'s running plan (ACTIVE or PAST_DUE; a plan still waiting for the card collector prices nothing); none: not billed.'),
    gate_on_balance: z.boolean().describe('Whether the event was gated on available balance.'),
    metadata: metadataOut,
    idempotency_key: z.string().nullable().describe('The idempotency_key sent with the event, or null.'),
    created_at: timestamp('When the event was recorded'),
    updated_at: maybeTimestamp('Last state change'),
    expires_at: maybeTimestamp('When a pending event is cancelled automatically; null unless pending'),
  })
  .describe('A billable usage record.');

export const checkResult = z
  .strictObject({
    allowed: z.boolean().describe('Whether recording the event now would pass.'),
    cost: costOut.nullable().describe('What the event would cost now; null when it would not be billed.'),
    available: unitsNumber('Units available.').nullable().describe('What the charged balance has available now (0 when the balance does not exist yet); null when the event would not be billed.'),
    reason: z.enum(['insufficient_balance', 'spend_limit']).nullable().describe('Why it would be refused; null when allowed.'),
  })
  .describe('The answer to a check: priced and gated as recording the event now would be; nothing recorded.');
export const spendLimitRecord = z
  .strictObject({
    denomination: z.string().describe('The denomination whose spend is limited.'),
    period: z.enum(['day', 'week', 'month']).describe('UTC calendar day, ISO week (from Monday) or calendar month.'),
    limit: unitsNumber('The most the period may spend.'),
    action: z.enum(['reject', 'notify']).describe('reject: an event that would pass the limit is rejected; notify: passing it sends `spend_limit_reached` once per period.'),
    spent: unitsNumber('Spent in the period under way: completed costs plus live holds.'),
    period_start: timestamp('Start of the period under way'),
    period_end: timestamp('End of the period under way (the next one\'s start)'),
  })
  .describe('A spend limit of an account, with its period under way.');

export const usageRow = z
  .strictObject({
    start: timestamp('Start of the bucket: the UTC hour, day or month (a window\'s first and last buckets may cover less of it)'),
    group: z.string().nullable().describe('The events\' type (group_by=type), or the text of the property (group_by=property:<name>; null for events without it).'),
    denomination: z.string().nullable().describe('The events\' cost denomination; null for events without a cost (counted, cost 0).'),
    events: z.int().nonnegative().describe('Completed events in the bucket.'),
    cost: unitsNumber('Sum of their costs, exact.'),
    quantities: z.record(z.string(), z.number()).describe('Per quantity name, the exact sum of the events\' quantities (units: JSON numbers rendered from exact decimals); {} when they carry none.'),
  })
  .describe('Completed events of one bucket, group and cost denomination, summed exactly.');

export const eventWithBalance = event
  .extend({ balance: balance.nullable().describe('The Balance of the charged denomination after the event; null when the event is not billed.') })
  .describe('The event record with the resulting balance.');

const planBalanceOut = z.strictObject({
  amount: unitsNumber('Units included per period.'),
  denomination: z.string().describe('Balance the plan creates and resets.'),
  overage_charge_amount: usdCents('Charge per unit below zero at renewal (postpay).'),
  overage_charge_denomination: z.literal('USD').describe('Always USD.'),
  variable_unit_price: z.number().nullable().describe('USD cents per unit (may have decimals) when the amount is choosable per account; null otherwise.'),
});

export const plan = z
  .strictObject({
    id: prefixed('p', 'Plan id'),
    company_id: prefixed('c', 'Owning company id'),
    name: z.string().describe('Plan name.'),
    charge_amount: usdCents('Charge per billing period.'),
    charge_denomination: z.literal('USD').describe('Always USD.'),
    billing_period: z.enum(['day', 'week', 'month', 'year']).describe('Length of a period.'),
    overage_charge_mode: z.enum(['postpay', 'none']).describe('postpay: units below zero are billed at renewal; none: not billed.'),
    threshold_alert_percentage: z.string().nullable().describe('Usage percentage of an included balance that fires the threshold webhook, as a numeric string; null when off.'),
    balances: z.array(planBalanceOut).describe('Balances the plan creates, with their included amounts.'),
    billing_rules: z.array(billingRuleOut).describe("The rate card: for each event, the first rule of its type (in this order) whose filters all match prices it."),
    flags: z.record(z.string(), z.boolean()).describe('Feature flags copied to accounts on the plan.'),
    metadata: metadataOut,
    created_at: timestamp('When the plan was created'),
    updated_at: maybeTimestamp('Last change'),
  })
  .describe('A preset of balances and charges.');

export const charge = z
  .strictObject({
    id: prefixed('ch', 'Charge id'),
    account_id: prefixed('a', 'Account id'),
    amount: usdCents('Amount charged.'),
    currency: z.literal('usd').describe('Always usd.'),
    reason: z.string().describe('Why: deposit, refill_monthly, refill_threshold, plan_start, plan_upgrade, plan_renewal, ...'),
    description: z.string().describe('Human-readable description.'),
    status: z.enum(['pending', 'succeeded', 'failed']).describe('pending while the processor answers; then succeeded or failed.'),
    processor_payment_intent_id: z.string().nullable().describe('Payment processor payment intent id (pi_...), or null.'),
    failure_code: z.string().nullable().describe('Why it failed (card_declined, insufficient_funds, payment_method_required, processor_error, ...), or null.'),
    failure_message: z.string().nullable().describe('Readable failure, or null.'),
    created_at: timestamp('When the charge was attempted'),
    updated_at: maybeTimestamp('Last change'),
  })
  .describe('One attempt to charge the account\'s card.');

const companyFields = {
  id: prefixed('c', 'Company id; the Basic auth username'),
  name: z.string().describe('Company name.'),
  email: z.string().describe('Contact email.'),
  processor_configured: z.boolean().describe('Whether a processor key is stored (the key itself is never returned).'),
  processor_publishable_key: z.string().nullable().describe('Publishable key used by the hosted card collector, or null.'),
  portal_topups: z
    .array(
      z.strictObject({
        denomination: z.string().describe('Balance the package credits.'),
        amount_to_deposit: unitsNumber('Units the package adds.'),
        amount_to_charge: z.int().describe('USD cents charged to the card on file.'),
      }),
    )
    .describe('Credit packages the customer portal offers to buy with the card on file; [] when none.'),
  usage_properties: z.array(z.string()).describe('Event properties usage is rolled up by: usage grouped by one of them reads hourly roll-ups; [] when none.'),
  created_at: timestamp('When the company was registered'),
};
export const company = z.strictObject(companyFields).describe('A company: the API user.');
export const companyWithKey = z
  .strictObject({ ...companyFields, api_key: z.string().describe('The first API key; the Basic auth password. Shown only in this response.') })
  .describe('The registered company with its first API key.');

const apiKeyFields = {
  id: prefixed('key', 'API key id'),
  last4: z.string().describe('Last four characters of the key.'),
  created_at: timestamp('When the key was issued'),
  last_used_at: maybeTimestamp('Last use'),
  revoked_at: maybeTimestamp('When the key was revoked'),
};
export const apiKey = z.strictObject(apiKeyFields).describe('An API key, without its secret.');
export const apiKeyWithSecret = z
  .strictObject({ ...apiKeyFields, api_key: z.string().describe('The secret key; shown only in this response.') })
  .describe('A new API key with its secret.');

export const topicEnum = z.enum(TOPICS).describe('Webhook topic.');

const webhookFields = {
  id: prefixed('w', 'Webhook id'),
  company_id: prefixed('c', 'Owning company id'),
  url: z.string().describe('Where deliveries are POSTed.'),
  username: z.string().nullable().describe('Basic auth username sent with deliveries, or null.'),
  password: z.string().nullable().describe('Basic auth password sent with deliveries, or null.'),
  style: z.enum(['topic', 'type']).describe('topic: registered by topic (payload variant B); type: registered with POST /v1/webhooks (payload variant A).'),
  topics: z.array(topicEnum).describe('Topics the webhook is subscribed to.'),
  created_at: timestamp('When the webhook was registered'),
  updated_at: maybeTimestamp('Last change'),
};
export const webhook = z.strictObject(webhookFields).describe('A registered webhook url.');
export const webhookWithSecret = z
  .strictObject({
    ...webhookFields,
    secret: z.string().regex(/^whsec_/).describe('Standard Webhooks signing secret (whsec_...); shown only when the webhook is created.'),
  })
  .describe('A new webhook with its signing secret.');
export const webhookDeleted = z.strictObject({ ...webhookFields, deleted: z.literal(true).describe('Always true.') }).describe('The deleted webhook.');

export const subscription = z
  .strictObject({ webhook_id: prefixed('w', 'Webhook id'), topic: topicEnum })
  .describe('A subscription of a webhook to a topic.');
export const subscriptionDeleted = z
  .strictObject({ webhook_id: prefixed('w', 'Webhook id'), topic: topicEnum, deleted: z.literal(true).describe('Always true.') })
  .describe('The removed subscription.');
export const subscriptionRecord = z
  .strictObject({ webhook_id: prefixed('w', 'Webhook id'), topic: topicEnum, created_at: timestamp('When it was subscribed') })
  .describe('A subscription with its creation time.');

const payloadData = z
  .record(z.string(), z.unknown())
  .optional()
  .describe('Extra facts when there are any: the failed charge (charge_id, amount, failure_code), the card saved through a hosted page (source: collector or portal, link_id, payment_method, previous_payment_method), the threshold crossed (reason, threshold, threshold_alert_percentage, included_amount), the plan refilled (reason, plan_id), the refill (amount, usd_charge, charge_id).');

export const webhookPayloadByType = z
  .strictObject({
    company_id: prefixed('c', 'Company id'),
    callback_id: prefixed('whd', 'Delivery id, the same for every attempt (the webhook-id header, which a balance_change retried with a newer balance suffixes with _r<attempt>)'),
    account_id: prefixed('a', 'Account id'),
    type: topicEnum.describe('Event type.'),
    account_balance: z.number().describe('Balance amount as a JSON number.'),
    account_denomination: z.string().describe('Balance denomination (USD for payment_failed and card_changed).'),
    data: payloadData,
  })
  .describe('Variant A payload: sent to webhooks registered with POST /v1/webhooks (type + url).');

export const webhookPayloadByTopic = z
  .strictObject({
    webhook_id: prefixed('w', 'Webhook id'),
    topic: topicEnum,
    account_id: prefixed('a', 'Account id'),
    denomination: z.string().describe('Balance denomination (USD for payment_failed and card_changed).'),
    balance: z.string().describe('Balance amount as an exact decimal string.'),
    data: payloadData,
  })
  .describe('Variant B payload: sent to webhooks registered with POST /v1/companies/{company_id}/webhooks and subscribed to topics.');

export const deliveryAttempt = z
  .strictObject({
    id: prefixed('wha', 'Attempt id'),
    response_status: z.int().nullable().describe('HTTP status the receiver answered, or null when none.'),
    error: z.string().nullable().describe('Why no status came back: timeout, connection_failed, dns_failed, tls_failed or destination_not_allowed (a host inside the network); null when the receiver answered.'),
    duration_ms: z.int().nullable().describe('How long the attempt took.'),
    created_at: timestamp('When the attempt was made'),
  })
  .describe('One attempt to send a delivery.');

export const delivery = z
  .strictObject({
    id: prefixed('whd', 'Delivery id (the webhook-id header, without the _r<attempt> a balance_change retried with a newer balance adds)'),
    webhook_id: prefixed('w', 'Webhook id'),
    topic: topicEnum,
    account_id: maybePrefixed('a', 'Account id'),
    denomination: z.string().nullable().describe('Balance denomination.'),
    status: z.enum(['pending', 'sending', 'succeeded', 'failed']).describe('pending: waiting (or retrying later); sending: in flight; succeeded: a 2xx came back; failed: retries exhausted.'),
    attempts: z.int().nonnegative().describe('Attempts made so far: at most 20 per delivery, the 10 of the retry schedule and re-sends together.'),
    next_attempt_at: maybeTimestamp('Next attempt'),
    created_at: timestamp('When the notification was queued'),
    updated_at: maybeTimestamp('Last change'),
    payload: z.union([webhookPayloadByType, webhookPayloadByTopic]).describe('What was sent last or, while waiting, what would be sent now.'),
    attempts_log: z.array(deliveryAttempt).describe('Every attempt, oldest first (`GET .../deliveries/{delivery_id}/attempts` pages them).'),
  })
  .describe('One notification to one webhook, with its attempts.');

export const cardAttached = z
  .strictObject({ account_id: prefixed('a', 'Account id'), payment_method: paymentMethod.nullable().describe('The new default card.') })
  .describe('The card now on file.');

export const cardCollectorLink = z
  .strictObject({ account_id: prefixed('a', 'Account id'), card_collector_url: z.url().describe('One-time link to the hosted card form.') })
  .describe('A fresh card collector link.');

export const portalLink = z
  .strictObject({
    id: prefixed('pl', 'Portal link id: revokes it (DELETE /v1/portal_links/{portal_link_id})'),
    url: z.url().describe('Link to the customer portal page of this account, to send to the end customer. Shown only here: only a hash of it is stored.'),
    expires_at: timestamp('When the link stops working: expires_in seconds (24 hours by default) after it was made'),
  })
  .describe('A fresh customer portal link.');

export const portalLinkRecord = z
  .strictObject({
    id: prefixed('pl', 'Portal link id'),
    account_id: prefixed('a', 'Account id'),
    expires_at: timestamp('When the link stops (or stopped) working'),
    revoked_at: maybeTimestamp('When it was revoked'),
    created_at: timestamp('When it was made'),
  })
  .describe('A customer portal link, without its URL (only a hash of it is stored).');

export const portalLinksRevoked = z
  .strictObject({ account_id: prefixed('a', 'Account id'), revoked: z.int().nonnegative().describe('How many live links were revoked (0 when there were none).') })
  .describe('The account\'s portal links revoked.');

export const testClock = z.strictObject({ now: timestamp('The test clock time') }).describe('The service clock.');

export const health = z
  .strictObject({
    status: z.literal('ok').describe('Always ok when the call succeeds.'),
    database: z.enum(['embedded', 'postgres']).describe('embedded (PGlite) or postgres (DATABASE_URL).'),
  })
  .describe('Service health.');

export const liveness = z.strictObject({ status: z.literal('ok').describe('Always ok when the call succeeds.') }).describe('The process runs.');

export const planChangePreview = z
  .strictObject({
    plan_id: prefixed('p', 'The plan asked for'),
    effective: z.enum(['now', 'next_renewal']).describe('now: the change happens at once (an upgrade, a start, or undoing a scheduled downgrade). next_renewal: a downgrade, scheduled.'),
    charge_amount: usdCents('What changeplan with the same body charges now: the new period charge less the credit, plus the overage; 0 when nothing is charged, or when that comes to less than 50 cents (see carried_amount).'),
    carried_amount: usdCents('Cents of the change below 50 cents, the smallest card payment: not charged now, carried to the next renewal charge (never waived).'),
    credit_amount: usdCents('Credit for the unused time of the current period, taken off the new charge.'),
    overage_amount: usdCents('Postpaid overage of the current plan, billed with the change.'),
    next_plan_renewal: maybeTimestamp('When the plan would renew next'),
    balances: z
      .array(
        z.strictObject({
          denomination: z.string().describe('Balance denomination.'),
          amount: unitsNumber('Units the balance would hold.'),
          managed_by_plan_id: maybePrefixed('p', 'Plan that would manage the balance'),
        }),
      )
      .describe("The account's balances as they would be after the change, by denomination."),
  })
  .describe('What a plan change would do now; nothing is changed.');

const ERROR_TYPES = Object.keys(STATUS) as [ErrorType, ...ErrorType[]];

export const errorBody = z
  .strictObject({
    error: z
      .looseObject({
        type: z.enum(ERROR_TYPES).describe('Machine-readable kind; see the per-status responses.'),
        message: z.string().describe('Readable explanation, safe to show a developer (never a stack trace or SQL).'),
        param: z.string().nullable().describe('The field at fault (`name`, `[3].type`, `balances[0].amount`), or null.'),
        request_id: z.string().regex(/^req_/).describe('The Request-Id header of this response; quote it when asking for help.'),
        rejected_event_id: prefixed('ev', 'insufficient_balance and spend_limit_exceeded only: the rejected event recorded in place of the charge').optional(),
        decline_code: z.string().nullable().optional().describe('card_declined only, when known: the processor decline code.'),
        charge_pending: z.literal(true).optional().describe("processor_error only: the processor's answer about a charge is not known yet; the charge is settled automatically, and a retry with the same Idempotency-Key carries on with it."),
        charge_id: prefixed('ch', 'processor_error with charge_pending only: the pending charge').optional(),
        account_id: prefixed('a', 'processor_error with charge_pending on a plan charge (account creation or plan change) only: the account that keeps the charge pending').optional(),
      })
      .describe('What went wrong.'),
  })
  .describe('Every error response has this body.');

/** The component name of each response schema, as it appears under components.schemas. */
export const RESPONSE_SCHEMAS = {
  Account: account,
  PaymentMethod: paymentMethod,
  Balance: balance,
  MidMonthChange: midMonthChange,
  ScheduledRefillChange: scheduledRefillChange,
  ScheduledRefill: scheduledRefill,
  Transaction: transaction,
  Grant: grant,
  CreditsReport: creditsReport,
  Event: event,
  EventWithBalance: eventWithBalance,
  CheckResult: checkResult,
  SpendLimit: spendLimitRecord,
  UsageRow: usageRow,
  Plan: plan,
  Charge: charge,
  Company: company,
  CompanyWithApiKey: companyWithKey,
  ApiKey: apiKey,
  ApiKeyWithSecret: apiKeyWithSecret,
  Topic: topicEnum,
  Webhook: webhook,
  WebhookWithSecret: webhookWithSecret,
  WebhookDeleted: webhookDeleted,
  Subscription: subscription,
  SubscriptionDeleted: subscriptionDeleted,
  SubscriptionRecord: subscriptionRecord,
  WebhookPayloadByType: webhookPayloadByType,
  WebhookPayloadByTopic: webhookPayloadByTopic,
  Delivery: delivery,
  DeliveryAttempt: deliveryAttempt,
  CardAttached: cardAttached,
  CardCollectorLink: cardCollectorLink,
  PortalLink: portalLink,
  PortalLinkRecord: portalLinkRecord,
  PortalLinksRevoked: portalLinksRevoked,
  PlanChangePreview: planChangePreview,
  TestClock: testClock,
  Health: health,
  Liveness: liveness,
  Error: errorBody,
} as const;
export type ResponseSchemaName = keyof typeof RESPONSE_SCHEMAS;
