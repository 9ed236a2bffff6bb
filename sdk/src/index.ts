import { BillingClient, type ClientOptions } from './client.js';
import { Accounts, ApiKeys, Balances, Charges, Companies, Events, Grants, Plans, Refills, SpendLimits, TestClock, Transactions, Usage, Webhooks } from './resources.js';

/**
 * The billing API client.
 *
 * ```ts
 * const billing = new Billing({ baseUrl: 'https://billing.example.com', companyId: 'c_...', apiKey: 'sk_...' });
 * const account = await billing.accounts.create({ name: 'Ada', email: 'ada@example.com' });
 * for await (const event of billing.events.list({ account_id: account.id })) console.log(event.id);
 * ```
 */
export class Billing extends BillingClient {
  readonly companies = new Companies(this);
  readonly apiKeys = new ApiKeys(this);
  readonly accounts = new Accounts(this);
  readonly balances = new Balances(this);
  readonly grants = new Grants(this);
  readonly transactions = new Transactions(this);
  readonly charges = new Charges(this);
  readonly refills = new Refills(this);
  readonly events = new Events(this);
  readonly usage = new Usage(this);
  readonly spendLimits = new SpendLimits(this);
  readonly plans = new Plans(this);
  readonly webhooks = new Webhooks(this);
  readonly testClock = new TestClock(this);

  constructor(options: ClientOptions) {
    super(options);
  }
}

export { BillingClient, type ClientOptions } from './client.js';
export { BillingApiError, BillingConnectionError, BillingError, BillingTimeoutError, WebhookVerificationError, type ErrorFields, type ErrorType } from './errors.js';
export { ListPromise, type Page } from './pagination.js';
export { verifyWebhook, type VerifyWebhookOptions, type WebhookHeaders, type WebhookPayload } from './webhooks.js';
export { operations, type OperationId } from './operations.js';
export type { CallOptions, HttpMethod, ListItem, ListPath, PathsFor, QueryParams, RequestOptions, ResponseBody } from './types.js';
export type * from './schema.js';
// The document's \`operations\` interface, whose name the runtime map of operations holds.
export type { operations as OperationTypes } from './schema.js';
export { Accounts, ApiKeys, Balances, Charges, Companies, Events, Grants, Plans, Refills, SpendLimits, TestClock, Transactions, Usage, Webhooks } from './resources.js';
