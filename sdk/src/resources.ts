// The API's operations grouped as the reference groups them, one method each. Every method calls
// BillingClient.request (or paginate) with the document's own path, so the compiler holds each
// one to the generated types. sdk/test/generate.test.ts lists any operation left without one.
import type { BillingClient } from './client.js';
import type { ListPromise } from './pagination.js';
import type * as S from './schema.js';
import type { CallOptions, QueryParams } from './types.js';

type Body<N extends keyof S.components['schemas']> = S.components['schemas'][N];

abstract class Resource {
  constructor(protected readonly client: BillingClient) {}
}

/** Your company, and registration of new ones (the operator's call). */
export class Companies extends Resource {
  /** The caller's own company, as a one-item list. */
  list(options?: CallOptions): ListPromise<S.Company> {
    return this.client.paginate('/v1/companies', options);
  }

  /** Changes your company's settings: `portal_topups`, the credit packages the customer portal offers; `usage_properties`, the event properties usage is rolled up by. */
  async update(body: Body<'CompanyUpdate'>, options?: CallOptions): Promise<S.Company> {
    return (await this.client.request('patch', '/v1/companies/{company_id}', { ...options, body })).data;
  }

  /** Registers a company (needs adminToken). The API key is answered only here. */
  async create(body: Body<'CompanyCreate'>, options?: CallOptions): Promise<S.CompanyWithApiKey> {
    return (await this.client.request('post', '/v1/companies', { ...options, body })).data;
  }
}

/** API keys of your company. */
export class ApiKeys extends Resource {
  /** Issues another key; its secret is answered only here. */
  async create(options?: CallOptions): Promise<S.ApiKeyWithSecret> {
    return (await this.client.request('post', '/v1/companies/{company_id}/api_keys', { ...options })).data;
  }

  /** Every key, newest first, revoked ones included, without secrets. */
  list(query?: QueryParams<'/v1/companies/{company_id}/api_keys'>, options?: CallOptions): ListPromise<S.ApiKey> {
    return this.client.paginate('/v1/companies/{company_id}/api_keys', { ...options, query });
  }

  async revoke(keyId: string, options?: CallOptions): Promise<S.ApiKey> {
    return (await this.client.request('delete', '/v1/companies/{company_id}/api_keys/{key_id}', { ...options, path: { key_id: keyId } })).data;
  }
}

/** Your customers. */
export class Accounts extends Resource {
  /** With `plan_id`, the plan's first period is charged at once (a card, `token`, or the collector is needed). */
  async create(body: Body<'AccountCreate'>, options?: CallOptions): Promise<S.Account> {
    return (await this.client.request('post', '/v1/companies/{company_id}/accounts', { ...options, body })).data;
  }

  list(query?: QueryParams<'/v1/companies/{company_id}/accounts'>, options?: CallOptions): ListPromise<S.Account> {
    return this.client.paginate('/v1/companies/{company_id}/accounts', { ...options, query });
  }

  async get(accountId: string, options?: CallOptions): Promise<S.Account> {
    return (await this.client.request('get', '/v1/accounts/{account_id}', { ...options, path: { account_id: accountId } })).data;
  }

  async update(accountId: string, body: Body<'AccountUpdate'>, options?: CallOptions): Promise<S.Account> {
    return (await this.client.request('patch', '/v1/accounts/{account_id}', { ...options, path: { account_id: accountId }, body })).data;
  }

  /** Makes a card token the default payment method; a past-due renewal is retried with it. */
  async attachCard(accountId: string, body: Body<'CardAttach'>, options?: CallOptions): Promise<S.CardAttached> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/card', { ...options, path: { account_id: accountId }, body })).data;
  }

  /** A fresh one-time link to the hosted card form, to send to the customer. */
  async createCardCollectorLink(accountId: string, options?: CallOptions): Promise<S.CardCollectorLink> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/card_collector', { ...options, path: { account_id: accountId } })).data;
  }

  /**
   * A link to the account's customer portal (balances, plan, charges, card form), for
   * `expires_in` seconds (300 to 86,400; 24 hours by default). Keep its `id` to revoke it.
   */
  async createPortalLink(accountId: string, body?: Body<'PortalLinkCreate'>, options?: CallOptions): Promise<S.PortalLink> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/portal_link', { ...options, path: { account_id: accountId }, body })).data;
  }

  /** Stops one portal link at once (its page and card form). */
  async revokePortalLink(portalLinkId: string, options?: CallOptions): Promise<S.PortalLinkRecord> {
    return (await this.client.request('delete', '/v1/portal_links/{portal_link_id}', { ...options, path: { portal_link_id: portalLinkId } })).data;
  }

  /** Stops every live portal link of the account at once; answers how many. */
  async revokePortalLinks(accountId: string, options?: CallOptions): Promise<S.PortalLinksRevoked> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/portal_links/revoke', { ...options, path: { account_id: accountId } })).data;
  }

  /** An upgrade takes effect at once (with credit for unused time); a downgrade waits for the renewal. */
  /** What `changePlan` with the same body would charge, credit and grant, without changing anything. */
  async previewPlanChange(accountId: string, body: Body<'PlanChange'>, options?: CallOptions): Promise<S.PlanChangePreview> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/changeplan/preview', { ...options, path: { account_id: accountId }, body })).data;
  }

  async changePlan(accountId: string, body: Body<'PlanChange'>, options?: CallOptions): Promise<S.Account> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/changeplan', { ...options, path: { account_id: accountId }, body })).data;
  }
}

/** One balance per account and denomination. */
export class Balances extends Resource {
  /** Creates the balance at 0; with `amount`, grants units (to a new or an existing balance). */
  async create(accountId: string, denomination: string, body?: Body<'BalanceCreate'>, options?: CallOptions): Promise<S.Balance> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/balance/{denomination}', { ...options, path: { account_id: accountId, denomination }, body })).data;
  }

  async get(accountId: string, denomination: string, options?: CallOptions): Promise<S.Balance> {
    return (await this.client.request('get', '/v1/accounts/{account_id}/balance/{denomination}', { ...options, path: { account_id: accountId, denomination } })).data;
  }

  /** The balances of the account, newest first; iterate it for every page. */
  list(accountId: string, options?: CallOptions): ListPromise<S.Balance> {
    return this.client.paginate('/v1/accounts/{account_id}/balances', { ...options, path: { account_id: accountId } });
  }

  /** Charges `amount_to_charge` cents to the card first (0: free), then adds `amount_to_deposit` units. */
  async deposit(accountId: string, body: Body<'DepositRequest'>, options?: CallOptions): Promise<S.Balance> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/deposit', { ...options, path: { account_id: accountId }, body })).data;
  }
}

/** Credit grants: the units added to a balance, drawn by priority, then soonest expiry, then oldest. */
export class Grants extends Resource {
  /** Grants units (promotional unless `category` says paid); send `idempotencyKey` to make a retry safe. */
  async create(accountId: string, denomination: string, body: Body<'GrantCreate'>, options?: CallOptions): Promise<S.Grant> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/balance/{denomination}/grants', { ...options, path: { account_id: accountId, denomination }, body })).data;
  }

  /** The balance's grants, newest first (`status`: live by default, expired, voided or all); iterate it for every page. */
  list(accountId: string, denomination: string, query?: QueryParams<'/v1/accounts/{account_id}/balance/{denomination}/grants'>, options?: CallOptions): ListPromise<S.Grant> {
    return this.client.paginate('/v1/accounts/{account_id}/balance/{denomination}/grants', { ...options, path: { account_id: accountId, denomination }, query });
  }

  /** Takes away what is left of the grant; voiding a voided grant answers it unchanged. */
  async void(grantId: string, options?: CallOptions): Promise<S.Grant> {
    return (await this.client.request('post', '/v1/grants/{grant_id}/void', { ...options, path: { grant_id: grantId } })).data;
  }

  /** The company's credit per denomination over `[from, to)` (the last 30 days by default): granted, spent, expired, voided, expired_paid_cents. */
  async report(query?: QueryParams<'/v1/companies/{company_id}/reports/credits'>, options?: CallOptions): Promise<S.CreditsReport> {
    return (await this.client.request('get', '/v1/companies/{company_id}/reports/credits', { ...options, query })).data;
  }
}

/** The ledger: every change to any balance of an account. */
export class Transactions extends Resource {
  list(accountId: string, query?: QueryParams<'/v1/accounts/{account_id}/transactions'>, options?: CallOptions): ListPromise<S.Transaction> {
    return this.client.paginate('/v1/accounts/{account_id}/transactions', { ...options, path: { account_id: accountId }, query });
  }
}

/** Every attempt to charge an account's card. */
export class Charges extends Resource {
  list(accountId: string, query?: QueryParams<'/v1/accounts/{account_id}/charges'>, options?: CallOptions): ListPromise<S.Charge> {
    return this.client.paginate('/v1/accounts/{account_id}/charges', { ...options, path: { account_id: accountId }, query });
  }
}

/** Monthly and threshold refills (auto_refill), scheduled changes, mid-month increases. */
export class Refills extends Resource {
  /** `refill_period: "monthly"` or a `threshold`; the first monthly refill happens at once. */
  async set(accountId: string, denomination: string, body: Body<'AutoRefillRequest'>, options?: CallOptions): Promise<S.Balance> {
    return (await this.client.request('put', '/v1/accounts/{account_id}/balance/{denomination}/auto_refill', { ...options, path: { account_id: accountId, denomination }, body })).data;
  }

  /** Turns both refills of the balance off. */
  async remove(accountId: string, denomination: string, options?: CallOptions): Promise<S.Balance> {
    return (await this.client.request('delete', '/v1/accounts/{account_id}/balance/{denomination}/auto_refill', { ...options, path: { account_id: accountId, denomination } })).data;
  }

  /** Changes the monthly refill of `denomination` from its next refill on (the way to decrease it). */
  async scheduleChange(accountId: string, body: Body<'RefillChangeRequest'>, options?: CallOptions): Promise<S.ScheduledRefill> {
    return (await this.client.request('put', '/v1/accounts/{account_id}/auto_refill', { ...options, path: { account_id: accountId }, body })).data;
  }

  /** Increases the monthly refill now, crediting the remaining units. */
  async modifyMidMonth(accountId: string, body: Body<'MidMonthRequest'>, options?: CallOptions): Promise<S.MidMonthChange> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/modifymidmonth', { ...options, path: { account_id: accountId }, body })).data;
  }
}

/** Usage. */
export class Events extends Resource {
  /**
   * Records one event and answers it with the resulting balance. A gated event that lacks
   * balance throws BillingApiError 402 `insufficient_balance` with `rejected_event_id`; one past a
   * `reject` spend limit, 402 `spend_limit_exceeded` with it.
   */
  async record(accountId: string, body: Body<'EventCreate'>, options?: CallOptions): Promise<S.EventWithBalance> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/events', { ...options, path: { account_id: accountId }, body })).data;
  }

  /**
   * Would this event pass if it were recorded now? Priced and gated as recording prices and
   * gates it (gated unless `gate_on_balance: false`); records nothing.
   */
  async check(accountId: string, body: Body<'EventCreate'>, options?: CallOptions): Promise<S.CheckResult> {
    return (await this.client.request('post', '/v1/accounts/{account_id}/check', { ...options, path: { account_id: accountId }, body })).data;
  }

  /** Up to 1000 events in one transaction; gated items that lack balance come back `rejected`. */
  async recordBatch(events: Body<'EventBatch'>, options?: CallOptions): Promise<S.Event[]> {
    return (await this.client.request('post', '/v1/events', { ...options, body: events })).data;
  }

  async get(eventId: string, options?: CallOptions): Promise<S.Event> {
    return (await this.client.request('get', '/v1/events/{event_id}', { ...options, path: { event_id: eventId } })).data;
  }

  /**
   * Completes a pending event (at the actual: `cost_override_amount` or `quantities`, with
   * `overage_behavior`), cancels it, or extends its hold (`expires_in` alone).
   */
  async update(eventId: string, body: Body<'EventTransition'>, options?: CallOptions): Promise<S.Event> {
    return (await this.client.request('put', '/v1/events/{event_id}', { ...options, path: { event_id: eventId }, body })).data;
  }

  list(query?: QueryParams<'/v1/companies/{company_id}/events'>, options?: CallOptions): ListPromise<S.Event> {
    return this.client.paginate('/v1/companies/{company_id}/events', { ...options, query });
  }
}

/** Completed events summed per hour, day or month and per type or property, exactly. */
export class Usage extends Resource {
  /** One account's usage over `[from, to)` (the last 30 days by default; at most 400 days), oldest bucket first. */
  async account(accountId: string, query?: QueryParams<'/v1/accounts/{account_id}/usage'>, options?: CallOptions): Promise<S.UsageRow[]> {
    return (await this.client.request('get', '/v1/accounts/{account_id}/usage', { ...options, path: { account_id: accountId }, query })).data;
  }

  /** The same over all of your company's accounts, or one of them with `account_id`. */
  async company(query?: QueryParams<'/v1/companies/{company_id}/usage'>, options?: CallOptions): Promise<S.UsageRow[]> {
    return (await this.client.request('get', '/v1/companies/{company_id}/usage', { ...options, query })).data;
  }
}

/** An account's spend limits per denomination and period (day, week, month), each rejecting or notifying past its limit. */
export class SpendLimits extends Resource {
  /** The account's limits, each with its period under way and what was spent in it so far. */
  async get(accountId: string, options?: CallOptions): Promise<S.SpendLimit[]> {
    return (await this.client.request('get', '/v1/accounts/{account_id}/spend_limits', { ...options, path: { account_id: accountId } })).data;
  }

  /**
   * Replaces the account's limits (`[]` clears them). An event past a `reject` limit then throws
   * BillingApiError 402 `spend_limit_exceeded` with `rejected_event_id`.
   */
  async set(accountId: string, limits: Body<'SpendLimitsPut'>, options?: CallOptions): Promise<S.SpendLimit[]> {
    return (await this.client.request('put', '/v1/accounts/{account_id}/spend_limits', { ...options, path: { account_id: accountId }, body: limits })).data;
  }
}

/** Presets of balances, charges, billing rules and flags. */
export class Plans extends Resource {
  async create(body: Body<'PlanCreate'>, options?: CallOptions): Promise<S.Plan> {
    return (await this.client.request('post', '/v1/companies/{company_id}/plans', { ...options, body })).data;
  }

  list(query?: QueryParams<'/v1/companies/{company_id}/plans'>, options?: CallOptions): ListPromise<S.Plan> {
    return this.client.paginate('/v1/companies/{company_id}/plans', { ...options, query });
  }

  async get(planId: string, options?: CallOptions): Promise<S.Plan> {
    return (await this.client.request('get', '/v1/plans/{plan_id}', { ...options, path: { plan_id: planId } })).data;
  }
}

type Topic = S.Topic;

/** Webhook registrations, topic subscriptions, the delivery log and re-sends. */
export class Webhooks extends Resource {
  /** Registers a url (variant B payloads); its signing secret is answered only here. */
  async create(body: Body<'WebhookCreate'>, options?: CallOptions): Promise<S.WebhookWithSecret> {
    return (await this.client.request('post', '/v1/companies/{company_id}/webhooks', { ...options, body })).data;
  }

  /** Registers a url for one event type (variant A payloads). */
  async registerByType(body: Body<'WebhookTypeRegistration'>, options?: CallOptions): Promise<S.WebhookWithSecret> {
    return (await this.client.request('post', '/v1/webhooks', { ...options, body })).data;
  }

  /** Webhooks of both styles, newest first. */
  list(query?: QueryParams<'/v1/companies/{company_id}/webhooks'>, options?: CallOptions): ListPromise<S.Webhook> {
    return this.client.paginate('/v1/companies/{company_id}/webhooks', { ...options, query });
  }

  async get(webhookId: string, options?: CallOptions): Promise<S.Webhook> {
    return (await this.client.request('get', '/v1/companies/{company_id}/webhooks/{webhook_id}', { ...options, path: { webhook_id: webhookId } })).data;
  }

  async update(webhookId: string, body: Body<'WebhookUpdate'>, options?: CallOptions): Promise<S.Webhook> {
    return (await this.client.request('patch', '/v1/companies/{company_id}/webhooks/{webhook_id}', { ...options, path: { webhook_id: webhookId }, body })).data;
  }

  async delete(webhookId: string, options?: CallOptions): Promise<S.WebhookDeleted> {
    return (await this.client.request('delete', '/v1/companies/{company_id}/webhooks/{webhook_id}', { ...options, path: { webhook_id: webhookId } })).data;
  }

  async subscribe(webhookId: string, topic: Topic, options?: CallOptions): Promise<S.Subscription> {
    return (await this.client.request('post', '/v1/companies/{company_id}/webhooks/{webhook_id}/subscribe/{topic}', { ...options, path: { webhook_id: webhookId, topic } })).data;
  }

  async unsubscribe(webhookId: string, topic: Topic, options?: CallOptions): Promise<S.SubscriptionDeleted> {
    return (await this.client.request('delete', '/v1/companies/{company_id}/webhooks/{webhook_id}/subscribe/{topic}', { ...options, path: { webhook_id: webhookId, topic } })).data;
  }

  listSubscriptions(webhookId: string, options?: CallOptions): ListPromise<S.SubscriptionRecord> {
    return this.client.paginate('/v1/companies/{company_id}/webhooks/{webhook_id}/subscriptions', { ...options, path: { webhook_id: webhookId } });
  }

  /** Every notification to the webhook, newest first, each with all its attempts. */
  listDeliveries(webhookId: string, query?: QueryParams<'/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries'>, options?: CallOptions): ListPromise<S.Delivery> {
    return this.client.paginate('/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries', { ...options, path: { webhook_id: webhookId }, query });
  }

  async getDelivery(webhookId: string, deliveryId: string, options?: CallOptions): Promise<S.Delivery> {
    return (await this.client.request('get', '/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}', { ...options, path: { webhook_id: webhookId, delivery_id: deliveryId } })).data;
  }

  /** The delivery's attempts, newest first. */
  listDeliveryAttempts(webhookId: string, deliveryId: string, query?: QueryParams<'/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/attempts'>, options?: CallOptions): ListPromise<S.DeliveryAttempt> {
    return this.client.paginate('/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/attempts', { ...options, path: { webhook_id: webhookId, delivery_id: deliveryId }, query });
  }

  /** Sends the delivery again now (at most 20 attempts per delivery in all) and answers it with the new attempt logged. */
  async retryDelivery(webhookId: string, deliveryId: string, options?: CallOptions): Promise<S.Delivery> {
    return (await this.client.request('post', '/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/retry', { ...options, path: { webhook_id: webhookId, delivery_id: deliveryId } })).data;
  }
}

/** The service clock under BILLING_TEST_CLOCK=1 (needs adminToken). */
export class TestClock extends Resource {
  async get(options?: CallOptions): Promise<S.TestClockState> {
    return (await this.client.request('get', '/v1/test_clock', { ...options })).data;
  }

  /** Moves the clock and returns once all work due by then has run (`seconds: 0` runs what is due). */
  async advance(seconds: number, options?: CallOptions): Promise<S.TestClockState> {
    return (await this.client.request('post', '/v1/test_clock/advance', { ...options, body: { seconds } })).data;
  }
}
