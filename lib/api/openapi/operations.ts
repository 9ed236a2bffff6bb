import type { z } from 'zod';
import type { ErrorType } from '../../errors';
import { listQuery } from '../pagination';
import { accountCreate, accountListQuery, accountUpdate } from '../schemas/accounts';
import { balanceCreate, deposit, ledgerQuery } from '../schemas/balances';
import { cardAttach } from '../schemas/cards';
import { grantCreate, grantListQuery, reportWindow } from '../schemas/grants';
import { portalLinkCreate } from '../schemas/portal';
import { changePlan } from '../schemas/changeplan';
import { companyCreate } from '../schemas/companies';
import { batchItem, eventBatch, eventCreate, eventListQuery, eventTransition } from '../schemas/events';
import { planCreate } from '../schemas/plans';
import { autoRefill, modifyMidMonth, scheduledRefill } from '../schemas/refills';
import { advance } from '../schemas/test-clock';
import { spendLimit, spendLimitsPut } from '../schemas/spend-limits';
import { companyUsageQuery, usageQuery } from '../schemas/usage-query';
import { companyUpdate } from '../schemas/portal';
import { deliveryListQuery, typeRegistration, webhookCreate, webhookUpdate } from '../schemas/webhooks';
import type { ResponseSchemaName } from './responses';
import * as ex from './examples';

/**
 * The request bodies, by component name: the very zod schemas the route files pass to
 * withCompany/withAdmin, so the document and the validation cannot disagree.
 */
export const REQUEST_SCHEMAS = {
  CompanyCreate: companyCreate,
  CompanyUpdate: companyUpdate,
  AccountCreate: accountCreate,
  AccountUpdate: accountUpdate,
  CardAttach: cardAttach,
  PortalLinkCreate: portalLinkCreate,
  PlanChange: changePlan,
  BalanceCreate: balanceCreate,
  DepositRequest: deposit,
  GrantCreate: grantCreate,
  AutoRefillRequest: autoRefill,
  RefillChangeRequest: scheduledRefill,
  MidMonthRequest: modifyMidMonth,
  EventCreate: eventCreate,
  EventBatchItem: batchItem,
  EventBatch: eventBatch,
  EventTransition: eventTransition,
  PlanCreate: planCreate,
  WebhookCreate: webhookCreate,
  WebhookUpdate: webhookUpdate,
  WebhookTypeRegistration: typeRegistration,
  TestClockAdvance: advance,
  SpendLimitInput: spendLimit,
  SpendLimitsPut: spendLimitsPut,
} satisfies Record<string, z.ZodType>;
export type RequestSchemaName = keyof typeof REQUEST_SCHEMAS;

export const TAGS = [
  { name: 'Companies', description: 'Registration (operator), the caller\'s own company and its API keys.' },
  { name: 'Accounts', description: 'Customers of a company: create, read, update, card on file, plan changes.' },
  { name: 'Balances', description: 'One balance per account and denomination, the ledger, grants and deposits.' },
  { name: 'Refills', description: 'Monthly and threshold refills, scheduled changes and mid-month increases.' },
  { name: 'Events', description: 'Billable usage: single (optionally gated), batches, pending holds.' },
  { name: 'Usage', description: 'Completed events summed by hour, day or month, grouped by type or by a property.' },
  { name: 'Plans', description: 'Presets of balances, charges, billing rules and flags.' },
  { name: 'Charges', description: 'Every attempt to charge an account\'s card.' },
  { name: 'Webhooks', description: 'Registration, topic subscriptions, the delivery log and re-sends.' },
  { name: 'Test clock', description: 'Operator-only control of the service clock (BILLING_TEST_CLOCK=1).' },
  { name: 'Service', description: 'Probes (liveness, readiness) and this document.' },
] as const;
export type Tag = (typeof TAGS)[number]['name'];

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export type Operation = {
  method: Method;
  path: string;
  operationId: string;
  tag: Tag;
  summary: string;
  description?: string;
  /** company: Basic (company id : API key); admin: operator bearer token; public: none. */
  auth: 'company' | 'admin' | 'public';
  body?: { schema: RequestSchemaName; optional?: boolean; example: unknown };
  query?: z.ZodType;
  response: {
    /** A component of responses.ts; OpenApiDocument: this document itself, served bare. */
    schema: ResponseSchemaName | 'OpenApiDocument';
    /**
     * paged: a list with limit/starting_after, has_more and a Link header; all: a list never
     * paged (has_more is always false); batch: the array answer of a batch call, in request
     * order (not a list: no has_more).
     */
    list?: 'paged' | 'all' | 'batch';
    description: string;
    example: unknown;
  };
  /** Error types beyond the ones every call of its kind can answer (see document.ts). */
  errors?: ErrorType[];
  /** The operationId of the operation whose very handler answers here too (`x-alias-of`). */
  aliasOf?: string;
};

const PAY: ErrorType[] = ['payment_method_required', 'card_declined', 'processor_error'];

const CANONICAL: Operation[] = [
  // Service
  {
    method: 'get', path: '/health', operationId: 'getHealth', tag: 'Service', auth: 'public',
    summary: 'Health check',
    description: 'No authentication. The readiness probe under its older name: the same answer as `/readyz`. Served at `/health` only (there is no `/v1/health`).',
    response: { schema: 'Health', description: 'The service and its database answer, with every migration applied.', example: { status: 'ok', database: 'embedded' } },
    errors: ['service_unavailable'],
  },
  {
    method: 'get', path: '/livez', operationId: 'getLiveness', tag: 'Service', auth: 'public',
    summary: 'Liveness probe',
    description: 'No authentication, no database: 200 while the process runs and its event loop answers. Restart the process when it stops answering.',
    response: { schema: 'Liveness', description: 'The process runs.', example: { status: 'ok' } },
  },
  {
    method: 'get', path: '/readyz', operationId: 'getReadiness', tag: 'Service', auth: 'public',
    summary: 'Readiness probe',
    description:
      'No authentication. 200 when the database answers and every committed migration is applied; otherwise 503 `service_unavailable` saying why, and 503 from the moment the process starts shutting down (SIGTERM), so a load balancer stops sending it requests.',
    response: { schema: 'Health', description: 'Ready to serve.', example: { status: 'ok', database: 'postgres' } },
    errors: ['service_unavailable'],
  },
  {
    method: 'get', path: '/v1/openapi.json', operationId: 'getOpenApiDocument', tag: 'Service', auth: 'public',
    summary: 'This OpenAPI document',
    description: 'No authentication. Served bare (not wrapped in `data`), as OpenAPI tools expect. A browsable rendering is at `/docs`.',
    response: { schema: 'OpenApiDocument', description: 'The OpenAPI 3.1 document.', example: { openapi: '3.1.0', info: { title: 'Usage-based billing API', version: '1.0.0' }, paths: {} } },
  },

  // Companies
  {
    method: 'post', path: '/v1/companies', operationId: 'createCompany', tag: 'Companies', auth: 'admin',
    summary: 'Register a company (operator)',
    description:
      'The operator\'s registration call, authorized with `Authorization: Bearer <ADMIN_TOKEN>`. Without `ADMIN_TOKEN` configured the call is 404. The API key comes back only in this response; `npm run company:create` does the same from a shell.',
    body: { schema: 'CompanyCreate', example: { name: 'Acme Analytics', email: 'billing@acme.example', processor_key: 'rk_test_51AcmeRestricted', processor_publishable_key: 'pk_test_51AcmeExample', password: 'correct horse battery' } },
    response: { schema: 'CompanyWithApiKey', description: 'The company with its first API key.', example: { ...ex.companyExample, api_key: 'sk_Q2hVbXlXc2VjcmV0S2V5RXhhbXBsZQ' } },
  },
  {
    method: 'get', path: '/v1/companies', operationId: 'listCompanies', tag: 'Companies', auth: 'company',
    summary: "The caller's own company",
    description: 'A one-item list holding the authenticated company. No secrets.',
    query: listQuery,
    response: { schema: 'Company', list: 'all', description: 'A one-item array.', example: [ex.companyExample] },
  },
  {
    method: 'patch', path: '/v1/companies/{company_id}', operationId: 'updateCompany', tag: 'Companies', auth: 'company',
    summary: "Change the company's settings",
    description:
      '`portal_topups`: the credit packages the customer portal offers, replacing the list (`[]` offers none; at most 10, each listed once). The customer buys one with the card on file, as a deposit: charged first, units granted only once paid, and a resubmitted purchase never pays twice. A package taken out of the list can no longer be bought, even from a page loaded before.\n\n`usage_properties`: the event properties usage is rolled up by, replacing the list (at most 5, each once). `group_by=property:<name>` on the usage endpoints reads a declared property from hourly roll-ups, as fast as grouping by type; an undeclared property is summed from the events themselves, which takes seconds on an account with millions of events in the window. A property declared now is rolled up from the hours that close from then on, and its older hours are filled in the background, a week at a time, newest first; until then those hours are read from the events, so answers are the same, only slower. Taking a property out of the list drops its roll-up. Declare properties with few distinct values (a model, a region): each value is a row per hour and account. Another company\'s id is 404.',
    body: { schema: 'CompanyUpdate', example: { portal_topups: [{ denomination: 'credits', amount_to_deposit: 1000, amount_to_charge: 1000 }, { denomination: 'credits', amount_to_deposit: 5500, amount_to_charge: 5000 }] } },
    response: { schema: 'Company', description: 'The company with its settings.', example: ex.companyExample },
  },
  {
    method: 'post', path: '/v1/companies/{company_id}/api_keys', operationId: 'createApiKey', tag: 'Companies', auth: 'company',
    summary: 'Issue another API key',
    description: 'The secret is shown only in this response; keys are stored as hashes. Use it to rotate: issue, deploy, revoke the old one.',
    response: { schema: 'ApiKeyWithSecret', description: 'The new key with its secret.', example: { ...ex.apiKeyExample, last_used_at: null, api_key: 'sk_Q2hVbXlXc2VjcmV0S2V5RXhhbXBsZQ' } },
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/api_keys', operationId: 'listApiKeys', tag: 'Companies', auth: 'company',
    summary: 'List API keys', description: 'Newest first, without secrets, revoked ones included.',
    query: listQuery,
    response: { schema: 'ApiKey', list: 'paged', description: 'The keys.', example: [ex.apiKeyExample] },
  },
  {
    method: 'delete', path: '/v1/companies/{company_id}/api_keys/{key_id}', operationId: 'revokeApiKey', tag: 'Companies', auth: 'company',
    summary: 'Revoke an API key', description: 'Takes effect at once.',
    response: { schema: 'ApiKey', description: 'The revoked key.', example: { ...ex.apiKeyExample, revoked_at: '2027-03-11T09:00:00.000Z' } },
  },

  // Accounts
  {
    method: 'post', path: '/v1/companies/{company_id}/accounts', operationId: 'createAccount', tag: 'Accounts', auth: 'company',
    summary: 'Create an account',
    description:
      'Creates the processor customer (unless `processor_id` is given), attaches `token` as the default card, and with `plan_id` attaches the plan: its balances are created and its first period is charged at once. With `enable_card_collector` the response carries `card_collector_url` and the plan waits (`PENDING_PAYMENT_METHOD`) until the customer fills in the form.',
    body: { schema: 'AccountCreate', example: { name: 'Ada Lovelace', email: 'ada@example.com', external_id: 'cus-8812', metadata: { crm_id: '8812' }, plan_id: ex.IDS.plan, token: 'tok_visa' } },
    response: { schema: 'Account', description: 'The new account.', example: ex.accountExample },
    errors: PAY,
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/accounts', operationId: 'listAccounts', tag: 'Accounts', auth: 'company',
    summary: 'List accounts', description: 'Newest first. `external_id` finds the account a company knows by its own id in one call (a list of at most one).',
    query: accountListQuery,
    response: { schema: 'Account', list: 'paged', description: 'The accounts.', example: [ex.accountExample] },
  },
  {
    method: 'get', path: '/v1/accounts/{account_id}', operationId: 'getAccount', tag: 'Accounts', auth: 'company',
    summary: 'Get an account',
    response: { schema: 'Account', description: 'The account.', example: ex.accountExample },
  },
  {
    method: 'patch', path: '/v1/accounts/{account_id}', operationId: 'updateAccount', tag: 'Accounts', auth: 'company',
    summary: 'Update an account', description: 'Send at least one of name, email, metadata, billing_address_id, external_id.',
    body: { schema: 'AccountUpdate', example: { email: 'ada.lovelace@example.com', metadata: { crm_id: '8813' }, external_id: 'cus-8813' } },
    response: { schema: 'Account', description: 'The updated account.', example: { ...ex.accountExample, email: 'ada.lovelace@example.com', metadata: { crm_id: '8813' }, external_id: 'cus-8813', updated_at: '2027-03-11T09:00:00.000Z' } },
  },
  {
    method: 'post', path: '/v1/accounts/{account_id}/card', operationId: 'attachCard', tag: 'Accounts', auth: 'company',
    summary: 'Attach a card',
    description: 'Makes a card token from the processor\'s client-side card element the account\'s default payment method. A past-due plan renewal is retried with the new card.',
    body: { schema: 'CardAttach', example: { token: 'tok_visa' } },
    response: { schema: 'CardAttached', description: 'The card on file.', example: { account_id: ex.IDS.account, payment_method: ex.paymentMethodExample } },
    errors: PAY,
  },
  {
    method: 'post', path: '/v1/accounts/{account_id}/card_collector', operationId: 'createCardCollectorLink', tag: 'Accounts', auth: 'company',
    summary: 'New card collector link',
    description: 'A fresh one-time link to the hosted card form for this account, to send to the customer.',
    response: { schema: 'CardCollectorLink', description: 'The link.', example: { account_id: ex.IDS.account, card_collector_url: ex.accountWithCollectorExample.card_collector_url } },
  },
  {
    method: 'post', path: '/v1/accounts/{account_id}/portal_link', operationId: 'createPortalLink', tag: 'Accounts', auth: 'company',
    summary: 'New customer portal link',
    description:
      'A link to a page for the end customer of this account, without sign-in: balances (amount, pending, available), plan and next renewal, the last 20 charges with status and amount, and a form to replace the card on file (a past-due renewal is retried at once with the new card; a plan waiting for a card starts; every card saved through it sends `card_changed`). The link carries a 256-bit token and works for `expires_in` seconds (300 to 86,400; 24 hours when left out) unless revoked first (`DELETE /v1/portal_links/{portal_link_id}` with the `id` answered here, or `POST /v1/accounts/{account_id}/portal_links/revoke` for all of the account\'s); only its hash is stored, so the URL is shown only in this answer. 5 failed card attempts through it spend it (the page\'s card call then answers 410 `link_expired`).',
    body: { schema: 'PortalLinkCreate', optional: true, example: { expires_in: 3600 } },
    response: { schema: 'PortalLink', description: 'The link, its id and when it expires.', example: { id: ex.IDS.portalLink, url: 'https://billing.example.com/portal/Xq2Vw9RtYb3NmZ8pLd4HfJ5xKq2Vw9RtYb3NmZ8pLd4', expires_at: '2026-03-02T09:30:00.000Z' } },
  },
  {
    method: 'post', path: '/v1/accounts/{account_id}/portal_links/revoke', operationId: 'revokeAccountPortalLinks', tag: 'Accounts', auth: 'company',
    summary: 'Revoke all portal links of an account',
    description:
      'Every portal link of the account that has neither expired nor been revoked stops working at once: its page says the link was revoked and its card call answers 410 `link_expired` (a card submission already under way finishes). Links made afterwards work as usual.',
    response: { schema: 'PortalLinksRevoked', description: 'How many live links were revoked.', example: { account_id: ex.IDS.account, revoked: 2 } },
  },
  {
    method: 'delete', path: '/v1/portal_links/{portal_link_id}', operationId: 'revokePortalLink', tag: 'Accounts', auth: 'company',
    summary: 'Revoke a portal link',
    description:
      'The link stops working at once: its page says it was revoked and its card call answers 410 `link_expired` (a card submission already under way finishes). Revoking a link again, or an expired one, changes nothing and answers it as it is.',
    response: { schema: 'PortalLinkRecord', description: 'The link, with `revoked_at`.', example: { id: ex.IDS.portalLink, account_id: ex.IDS.account, expires_at: '2026-03-02T09:30:00.000Z', revoked_at: '2026-03-01T10:02:00.000Z', created_at: '2026-03-01T09:30:00.000Z' } },
  },
  {
    method: 'post', path: '/v1/accounts/{account_id}/changeplan', operationId: 'changePlan', tag: 'Accounts', auth: 'company',
    summary: 'Change plan',
    description:
      'A plan whose period charge is higher (or equal) is an upgrade and takes effect at once: the new period starts now, the old plan\'s remaining included units are replaced, and credit for the unused time of the old period comes off the new charge. A cheaper plan is a downgrade, scheduled for the next renewal (`scheduled_plan_id`). A past-due account answers 409.',
    body: { schema: 'PlanChange', example: { plan_id: ex.IDS.planSmall } },
    response: { schema: 'Account', description: 'The account after the change.', example: { ...ex.accountExample, scheduled_plan_id: ex.IDS.planSmall } },
    errors: [...PAY, 'conflict'],
  },
  {
    method: 'post', path: '/v1/accounts/{account_id}/changeplan/preview', operationId: 'previewPlanChange', tag: 'Accounts', auth: 'company',
    summary: 'Preview a plan change',
    description:
      'Takes the `changeplan` body and changes nothing: answers what `changeplan` would do now, `charge_amount` (cents charged now: the new period charge less `credit_amount`, plus `overage_amount`), when it takes effect, and the balances as they would be. A `changeplan` (or another preview) with the same body within 10 minutes (in the same plan period, with no preview of another change of the account in between) charges exactly `charge_amount`, provided no usage is recorded meanwhile (the old plan\'s overage is measured at the change): its credit for unused time is reckoned as of the preview. A change `changeplan` would refuse answers the same error, `402 payment_method_required` included when the account has no card for a change that charges.',
    body: { schema: 'PlanChange', example: { plan_id: ex.IDS.planSmall } },
    response: { schema: 'PlanChangePreview', description: 'What the change would do.', example: ex.planChangePreviewExample },
    errors: ['payment_method_required', 'conflict'],
  },
  {
    method: 'get', path: '/v1/accounts/{account_id}/charges', operationId: 'listCharges', tag: 'Charges', auth: 'company',
    summary: 'List charges', description: 'Every charge attempt of the account, newest first, failed ones included.',
    query: listQuery,
    response: { schema: 'Charge', list: 'paged', description: 'The charges.', example: [ex.chargeExample] },
  },

  // Balances
  {
    method: 'post', path: '/v1/accounts/{account_id}/balance/{denomination}', operationId: 'createBalance', tag: 'Balances', auth: 'company',
    summary: 'Create a balance (or grant units)',
    description:
      'Creates the balance at 0 and returns it; without a body, creating one that exists returns it unchanged. With `amount`, adds units as a recorded grant to a new or an existing balance (send an `Idempotency-Key` to make a retry safe). Any number of denominations per account.',
    body: { schema: 'BalanceCreate', optional: true, example: { amount: 500, reason: 'Welcome bonus' } },
    response: { schema: 'Balance', description: 'The balance.', example: ex.newBalanceExample },
  },
  {
    method: 'get', path: '/v1/accounts/{account_id}/balance/{denomination}', operationId: 'getBalance', tag: 'Balances', auth: 'company',
    summary: 'Get a balance',
    response: { schema: 'Balance', description: 'The balance, with live pending holds reflected in available.', example: ex.balanceExample },
  },
  {
    method: 'get', path: '/v1/accounts/{account_id}/balances', operationId: 'listBalances', tag: 'Balances', auth: 'company',
    summary: 'List balances', description: 'The balances of the account, newest first.',
    query: listQuery,
    response: { schema: 'Balance', list: 'paged', description: 'The balances.', example: [ex.balanceExample] },
  },
  {
    method: 'get', path: '/v1/accounts/{account_id}/transactions', operationId: 'listTransactions', tag: 'Balances', auth: 'company',
    summary: 'The ledger',
    description: 'Every change to any balance of the account, newest first. For every balance, amount = sum of its entries.',
    query: ledgerQuery,
    response: { schema: 'Transaction', list: 'paged', description: 'Ledger entries.', example: [ex.transactionExample] },
  },
  {
    method: 'post', path: '/v1/accounts/{account_id}/balance/{denomination}/grants', operationId: 'createGrant', tag: 'Balances', auth: 'company',
    summary: 'Grant units',
    description:
      'Adds units as a credit grant (the balance is made when missing): `promotional` by default, drawn by `priority` (0 first), then soonest `expires_at` (never-expiring last), then oldest. What is left at `expires_at` expires: a ledger entry of type `expire`, exactly at that time whether or not anything ran then. A balance below zero is paid first by the grant. At most 1,000 live grants per balance. Send an `Idempotency-Key` to make a retry safe.',
    body: { schema: 'GrantCreate', example: { amount: 200, category: 'promotional', priority: 10, expires_at: '2027-04-10T00:00:00Z', reason: 'Launch week bonus' } },
    response: { schema: 'Grant', description: 'The grant.', example: ex.grantExample },
  },
  {
    method: 'get', path: '/v1/accounts/{account_id}/balance/{denomination}/grants', operationId: 'listGrants', tag: 'Balances', auth: 'company',
    summary: 'List grants',
    description: 'The balance\'s grants, newest first: `live` (the default), `expired`, `voided` or `all`.',
    query: grantListQuery,
    response: { schema: 'Grant', list: 'paged', description: 'The grants.', example: [ex.grantExample] },
  },
  {
    method: 'post', path: '/v1/grants/{grant_id}/void', operationId: 'voidGrant', tag: 'Balances', auth: 'company',
    summary: 'Void a grant',
    description: 'Takes away what is left of the grant (a ledger entry of type `void`). Voiding a voided grant answers it unchanged.',
    response: { schema: 'Grant', description: 'The grant, voided.', example: { ...ex.grantExample, remaining: 0, status: 'voided', voided_at: '2027-03-10T12:05:00.000Z' } },
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/reports/credits', operationId: 'creditsReport', tag: 'Balances', auth: 'company',
    summary: 'Credits report',
    description: 'Per denomination, over `[from, to)` (by default the 30 days up to now, now included; at most 400 days): units granted, spent, expired and voided, each split paid / promotional, and `expired_paid_cents`.',
    query: reportWindow,
    response: {
      schema: 'CreditsReport',
      description: 'The report.',
      example: {
        from: '2027-02-08T12:00:00.000Z',
        to: '2027-03-10T12:00:00.000Z',
        denominations: [{ denomination: 'credits', granted: { paid: 5000, promotional: 200 }, spent: { paid: 3100, promotional: 200 }, expired: { paid: 400, promotional: 0 }, voided: { paid: 0, promotional: 0 }, expired_paid_cents: 1000 }],
      },
    },
  },
  {
    method: 'post', path: '/v1/accounts/{account_id}/deposit', operationId: 'deposit', tag: 'Balances', auth: 'company',
    summary: 'Deposit units',
    description: 'Charges `amount_to_charge` cents to the card first (0: a free grant), then adds `amount_to_deposit` units. A failed charge changes no balance.',
    body: { schema: 'DepositRequest', example: { denomination: 'credits', amount_to_deposit: 1000, amount_to_charge: 2500 } },
    response: { schema: 'Balance', description: 'The balance after the deposit.', example: ex.balanceExample },
    errors: PAY,
  },

  // Refills
  {
    method: 'put', path: '/v1/accounts/{account_id}/balance/{denomination}/auto_refill', operationId: 'setAutoRefill', tag: 'Refills', auth: 'company',
    summary: 'Set a monthly or threshold refill',
    description:
      'Time-based: `refill_period: "monthly"` refills on the same day each month from today (the first refill at once; after the 28th, the 1st of the second following month and the 1st thereafter). The monthly setting already in effect (same `amount`, `usd_charge` and `threshold`, no change scheduled), sent again, changes nothing and charges nothing. Threshold-based: `threshold` adds `amount` units for `usd_charge` cents each time the balance drops below it; with `max_charges_per_month`, at most that many threshold refills are charged per calendar month (UTC), and past it none is and `refill_limit_reached` is sent once that month. While a refill charge that sets this balance\'s refills is pending at the processor, this call, the DELETE, the scheduled change and modifymidmonth answer 409 until it settles. A monthly setting (and modifymidmonth) made while another one, or a plan change or renewal, of the account is under way answers 409 with `Retry-After: 1`. Also at `.../autorefill`.',
    body: { schema: 'AutoRefillRequest', example: { amount: 1000, usd_charge: 2500, refill_period: 'monthly' } },
    response: { schema: 'Balance', description: 'The balance with its refill settings.', example: ex.balanceExample },
    errors: PAY,
  },
  {
    method: 'delete', path: '/v1/accounts/{account_id}/balance/{denomination}/auto_refill', operationId: 'removeAutoRefill', tag: 'Refills', auth: 'company',
    summary: 'Turn refills off', description: 'Removes both the monthly and the threshold refill of this balance (409 while a refill charge that sets them is pending at the processor). Also at `.../autorefill`.',
    response: { schema: 'Balance', description: 'The balance without refills.', example: { ...ex.balanceExample, refill_amount: 0, refill_usd_amount: 0, refill_on_day: '', next_periodic_refill: null } },
  },
  {
    method: 'put', path: '/v1/accounts/{account_id}/auto_refill', operationId: 'scheduleRefillChange', tag: 'Refills', auth: 'company',
    summary: 'Schedule a refill change for next month',
    description:
      'Changes the monthly refill of `denomination` from its next refill on (the way to decrease it): the same fields as the balance\'s own auto_refill path, with `refill_period: "monthly"` optional here, nothing charged now, and the new amount and charge used from the next monthly refill (`effective_at`). A threshold refill changes at once on `PUT /v1/accounts/{account_id}/balance/{denomination}/auto_refill`. Also at `/v1/accounts/{account_id}/autorefill`.',
    body: { schema: 'RefillChangeRequest', example: { denomination: 'credits', amount: 500, usd_charge: 1500, refill_period: 'monthly' } },
    response: {
      schema: 'ScheduledRefill', description: 'The scheduled change.',
      example: { account_id: ex.IDS.account, denomination: 'credits', amount: 500, usd_charge: 1500, effective_at: '2027-04-10T00:00:00.000Z' },
    },
  },
  {
    method: 'post', path: '/v1/accounts/{account_id}/modifymidmonth', operationId: 'modifyMidMonth', tag: 'Refills', auth: 'company',
    summary: 'Increase a monthly refill now',
    description:
      'Only increases (otherwise 400). The new monthly refill starts at once with all its units; remaining units are cancelled and their value at the old unit price (`usd_charge / amount`) comes off the new `usd_charge`; the refill day moves to today. POST and PUT behave the same.',
    body: { schema: 'MidMonthRequest', example: { denomination: 'credits', amount: 2000, usd_charge: 4500 } },
    response: {
      schema: 'MidMonthChange', description: 'The balance after the change, with the proration.',
      example: { ...ex.balanceExample, amount: 2000, available: 1998, refill_amount: 2000, refill_usd_amount: 4500, credit: 2489, charged: 2011 },
    },
    errors: PAY,
  },

  // Events
  {
    method: 'post', path: '/v1/accounts/{account_id}/events', operationId: 'recordEvent', tag: 'Events', auth: 'company',
    summary: 'Record one event',
    description:
      'Priced by `cost_override_amount` + `cost_override_denomination`, or else by the plan\'s billing rule for `type` (types without a rule are accepted and not billed). Without `gate_on_balance` it always succeeds and may leave the balance negative. With it, an event whose cost exceeds `available` is recorded as rejected, nothing is charged, and the call is 402 `insufficient_balance` with `rejected_event_id`. Gated or not, an event whose cost would take the account\'s spend past a `reject` spend limit is recorded as rejected (`reason: "spend_limit"`) and the call is 402 `spend_limit_exceeded` with `rejected_event_id`.',
    body: { schema: 'EventCreate', example: { type: 'query', cost_override_amount: 4.5, cost_override_denomination: 'credits', gate_on_balance: true, metadata: { query_id: 'q_991' } } },
    response: { schema: 'EventWithBalance', description: 'The event record with the resulting balance of the charged denomination.', example: { ...ex.eventExample, priced_by: 'override', gate_on_balance: true, balance: ex.balanceExample } },
    errors: ['insufficient_balance', 'spend_limit_exceeded'],
  },
  {
    method: 'post', path: '/v1/accounts/{account_id}/check', operationId: 'checkEvent', tag: 'Events', auth: 'company',
    summary: 'Check whether an event would pass',
    description:
      'Takes an event body and answers whether recording it now would pass: priced exactly as recording prices it (the override, or the plan\'s rate card from its quantities and properties, a graduated tier from the account\'s count so far) and gated on `available` (gated unless `gate_on_balance: false`), after the account\'s `reject` spend limits (`reason: "spend_limit"`, gated or not). Records nothing, charges nothing, sends nothing.',
    body: { schema: 'EventCreate', example: { type: 'llm', quantities: { input_tokens: 1200, output_tokens: 350 }, properties: { model: 'large' } } },
    response: { schema: 'CheckResult', description: 'Whether it would pass, what it would cost, and what is available.', example: { allowed: true, cost: { amount: 0.0065, denomination: 'usd' }, available: 12.5, reason: null } },
  },
  {
    method: 'get', path: '/v1/accounts/{account_id}/spend_limits', operationId: 'getSpendLimits', tag: 'Events', auth: 'company',
    summary: "The account's spend limits",
    description:
      'Every spend limit of the account, each with its period under way (`period_start`, `period_end`) and what was spent in it so far: the costs of completed events (a hold counts in the period it completed in) plus the live holds.',
    response: { schema: 'SpendLimit', list: 'all', description: 'The limits, by denomination and period.', example: [ex.spendLimitExample, { ...ex.spendLimitExample, limit: 40, action: 'notify' }] },
  },
  {
    method: 'put', path: '/v1/accounts/{account_id}/spend_limits', operationId: 'setSpendLimits', tag: 'Events', auth: 'company',
    summary: "Replace the account's spend limits",
    description:
      "The account's whole list of limits (`[]` clears them), at most one per denomination, period and action. `period` is a UTC calendar `day`, an ISO `week` (from Monday 00:00 UTC) or a calendar `month`. Spend in a period = the costs of completed events plus live holds, in the limit's denomination. An event (gated or not) whose cost would take it past a `reject` limit is recorded as rejected with `reason: \"spend_limit\"`: a single event answers 402 `spend_limit_exceeded` with `rejected_event_id`, a batch item comes back rejected, `check` answers `reason: \"spend_limit\"`. Passing a `notify` limit refuses nothing and sends `spend_limit_reached` once per period. The periods under way are counted from the account's events when the limits are set. A bad item is 400 naming it (`param: \"[1].period\"`); nothing is stored.",
    body: { schema: 'SpendLimitsPut', example: [{ denomination: 'credits', period: 'day', limit: 50, action: 'reject' }, { denomination: 'credits', period: 'day', limit: 40, action: 'notify' }] },
    response: { schema: 'SpendLimit', list: 'batch', description: 'The limits as stored, each with its period\'s spend so far.', example: [ex.spendLimitExample, { ...ex.spendLimitExample, limit: 40, action: 'notify' }] },
  },
  {
    method: 'post', path: '/v1/events', operationId: 'recordEvents', tag: 'Events', auth: 'company',
    summary: 'Record a batch of events',
    description:
      'Up to 1000 events (more is 413), each naming its `account_id`, in one transaction. The whole batch is validated first: 400 names the bad item (`param: "[3].type"`); an account that is not the caller\'s is 404 with `param: "[3].account_id"`. A gated item that lacks balance, or an item past a `reject` spend limit, comes back with `state: "rejected"` and its `reason`, in request order; the call is still 200.',
    body: {
      schema: 'EventBatch',
      example: [
        { account_id: ex.IDS.account, type: 'query' },
        { account_id: ex.IDS.account, type: 'export', cost_override: { amount: 2, denomination: 'credits' }, state: 'pending', gate_on_balance: true },
      ],
    },
    response: { schema: 'Event', list: 'batch', description: 'The event records, in request order.', example: [ex.eventExample, ex.pendingEventExample] },
    errors: ['not_found'],
  },
  {
    method: 'get', path: '/v1/events/{event_id}', operationId: 'getEvent', tag: 'Events', auth: 'company',
    summary: 'Get an event',
    response: { schema: 'Event', description: 'The event.', example: ex.eventExample },
  },
  {
    method: 'put', path: '/v1/events/{event_id}', operationId: 'transitionEvent', tag: 'Events', auth: 'company',
    summary: 'Complete, cancel or extend a pending event',
    description:
      '`complete` charges the held cost, or the actual sent with it: `cost_override_amount` (the held denomination) or `quantities` (priced by the rule that priced the hold). Less than held releases the rest; more is taken as `overage_behavior` says: `allow` (default; may go below zero), `cap` (at most the held cost plus what is available) or `reject` (409 `insufficient_balance`; the event stays pending). The record keeps `held_cost`. `cancelled` releases the hold. `expires_in` alone extends a pending hold to that many seconds from now. Pending events are cancelled automatically at `expires_at` (one hour after creation unless `expires_in` said otherwise). The same transition sent again with the same body answers the record and changes nothing; a different final amount, or any other transition (for example completing a cancelled event), is 409.',
    body: { schema: 'EventTransition', example: { state: 'complete', cost_override_amount: 1.5, overage_behavior: 'cap' } },
    response: { schema: 'Event', description: 'The event after the transition.', example: { ...ex.pendingEventExample, state: 'complete', cost: { amount: 1.5, denomination: 'credits' }, expires_at: null, updated_at: '2027-03-10T12:20:00.000Z' } },
    errors: ['conflict', 'insufficient_balance'],
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/events', operationId: 'listEvents', tag: 'Events', auth: 'company',
    summary: 'List events', description: 'Events of the company, newest first, with filters.',
    query: eventListQuery,
    response: { schema: 'Event', list: 'paged', description: 'The events.', example: [ex.pendingEventExample, ex.eventExample] },
  },

  // Usage
  {
    method: 'get', path: '/v1/accounts/{account_id}/usage', operationId: 'getAccountUsage', tag: 'Usage', auth: 'company',
    summary: "An account's usage",
    description:
      'Completed events of [`from`, `to`) summed per UTC bucket (`granularity`: `hour`, `day` (default) or `month`), group (`group_by`: `type` (default) or `property:<name>`, the text of that property, null for events without it) and cost denomination (`denomination` keeps one): the event count, the exact sum of their costs and of each of their quantities. Oldest bucket first; buckets without events are left out. `to` defaults to the end of the current hour, `from` to 30 days before `to`; a window is at most 400 days (more is 400, `param: "to"`), `from` must be before `to` (`param: "from"`). Closed hours (ended two hours ago) are read from an hourly roll-up, and the open ones from a provisional roll-up of every 5 minutes, so by type, or by a property the company declared in `usage_properties` (PATCH /v1/companies/{company_id}), the answer takes milliseconds whatever the number of events; by an undeclared property it reads the window\'s events, which takes seconds at millions of events. Both give the same exact sums. An answer of more than 50,000 rows is 400: narrow the window, coarsen the granularity or filter. An account of another company is 404.',
    query: usageQuery,
    response: { schema: 'UsageRow', list: 'all', description: 'The usage rows, oldest bucket first.', example: ex.usageExample },
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/usage', operationId: 'getCompanyUsage', tag: 'Usage', auth: 'company',
    summary: "The company's usage",
    description: 'The same as an account\'s usage, over all of the company\'s accounts, or one of them with `account_id` (another company\'s account is 404, `param: "account_id"`).',
    query: companyUsageQuery,
    response: { schema: 'UsageRow', list: 'all', description: 'The usage rows, oldest bucket first.', example: ex.usageExample },
  },

  // Plans
  {
    method: 'post', path: '/v1/companies/{company_id}/plans', operationId: 'createPlan', tag: 'Plans', auth: 'company',
    summary: 'Create a plan',
    description: 'Also at `/v1/companies/{company_id}/plan` (and `/companies/{company_id}/plan`).',
    body: {
      schema: 'PlanCreate',
      example: {
        name: 'Pro', charge_amount: 4900, billing_period: 'month', overage_charge_mode: 'postpay', threshold_alert_percentage: '80',
        balances: [{ amount: '1000', denomination: 'credits', overage_charge_amount: 2, overage_charge_denomination: 'USD' }],
        billing_rules: [{ type: 'query', amount: 4.5, denomination: 'credits' }],
        flags: { priority_support: true },
      },
    },
    response: { schema: 'Plan', description: 'The new plan.', example: ex.planExample },
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/plans', operationId: 'listPlans', tag: 'Plans', auth: 'company',
    summary: 'List plans', description: 'Newest first.',
    query: listQuery,
    response: { schema: 'Plan', list: 'paged', description: 'The plans.', example: [ex.planExample] },
  },
  {
    method: 'get', path: '/v1/plans/{plan_id}', operationId: 'getPlan', tag: 'Plans', auth: 'company',
    summary: 'Get a plan',
    response: { schema: 'Plan', description: 'The plan.', example: ex.planExample },
  },

  // Webhooks
  {
    method: 'post', path: '/v1/companies/{company_id}/webhooks', operationId: 'createWebhook', tag: 'Webhooks', auth: 'company',
    summary: 'Register a webhook (by topic)',
    description: 'Variant B: register a url (with optional Basic credentials), then subscribe it to topics. Deliveries carry the variant B payload. The signing secret is returned only here.',
    body: { schema: 'WebhookCreate', example: { url: 'https://hooks.acme.example/billing', username: 'billing', password: 's3cret-pass' } },
    response: { schema: 'WebhookWithSecret', description: 'The webhook with its signing secret.', example: { ...ex.webhookExample, topics: [], secret: ex.webhookSecretExample } },
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/webhooks', operationId: 'listCompanyWebhooks', tag: 'Webhooks', auth: 'company',
    summary: 'List webhooks', description: 'Both styles, newest first.',
    query: listQuery,
    response: { schema: 'Webhook', list: 'paged', description: 'The webhooks.', example: [ex.webhookExample] },
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/webhooks/{webhook_id}', operationId: 'getWebhook', tag: 'Webhooks', auth: 'company',
    summary: 'Get a webhook',
    response: { schema: 'Webhook', description: 'The webhook.', example: ex.webhookExample },
  },
  {
    method: 'patch', path: '/v1/companies/{company_id}/webhooks/{webhook_id}', operationId: 'updateWebhook', tag: 'Webhooks', auth: 'company',
    summary: 'Update a webhook', description: 'Any of url, username, password; null clears the credentials.',
    body: { schema: 'WebhookUpdate', example: { url: 'https://hooks.acme.example/billing/v2' } },
    response: { schema: 'Webhook', description: 'The updated webhook.', example: { ...ex.webhookExample, url: 'https://hooks.acme.example/billing/v2', updated_at: '2027-03-11T09:00:00.000Z' } },
  },
  {
    method: 'delete', path: '/v1/companies/{company_id}/webhooks/{webhook_id}', operationId: 'deleteWebhook', tag: 'Webhooks', auth: 'company',
    summary: 'Delete a webhook', description: 'Deliveries still waiting are cancelled.',
    response: { schema: 'WebhookDeleted', description: 'The deleted webhook.', example: { ...ex.webhookExample, deleted: true } },
  },
  {
    method: 'post', path: '/v1/companies/{company_id}/webhooks/{webhook_id}/subscribe/{topic}', operationId: 'subscribeWebhook', tag: 'Webhooks', auth: 'company',
    summary: 'Subscribe to a topic', description: 'Idempotent: subscribing twice leaves one subscription. An unknown topic is 400.',
    response: { schema: 'Subscription', description: 'The subscription.', example: { webhook_id: ex.IDS.webhook, topic: 'pause_balance' } },
  },
  {
    method: 'delete', path: '/v1/companies/{company_id}/webhooks/{webhook_id}/subscribe/{topic}', operationId: 'unsubscribeWebhook', tag: 'Webhooks', auth: 'company',
    summary: 'Unsubscribe from a topic', description: 'A topic the webhook is not subscribed to is 404.',
    response: { schema: 'SubscriptionDeleted', description: 'The removed subscription.', example: { webhook_id: ex.IDS.webhook, topic: 'pause_balance', deleted: true } },
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/webhooks/{webhook_id}/subscriptions', operationId: 'listSubscriptions', tag: 'Webhooks', auth: 'company',
    summary: 'List subscriptions', description: 'The topics of the webhook (at most seven). A subscription has no id of its own: `starting_after` takes the last topic of the page before.',
    query: listQuery,
    response: { schema: 'SubscriptionRecord', list: 'paged', description: 'The subscriptions.', example: [{ webhook_id: ex.IDS.webhook, topic: 'pause_balance', created_at: '2027-03-10T12:00:00.000Z' }] },
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries', operationId: 'listDeliveries', tag: 'Webhooks', auth: 'company',
    summary: 'The delivery log', description: 'Every notification to this webhook, newest first, each with its attempts (at most 20 per delivery; `.../deliveries/{delivery_id}/attempts` pages them).',
    query: deliveryListQuery,
    response: { schema: 'Delivery', list: 'paged', description: 'The deliveries.', example: [ex.deliveryExample] },
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}', operationId: 'getDelivery', tag: 'Webhooks', auth: 'company',
    summary: 'Get a delivery',
    response: { schema: 'Delivery', description: 'The delivery.', example: ex.deliveryExample },
  },
  {
    method: 'get', path: '/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/attempts', operationId: 'listDeliveryAttempts', tag: 'Webhooks', auth: 'company',
    summary: 'The attempt log of a delivery', description: 'Every attempt to send this delivery, newest first, a page at a time.',
    query: listQuery,
    response: { schema: 'DeliveryAttempt', list: 'paged', description: 'The attempts.', example: ex.deliveryExample.attempts_log },
  },
  {
    method: 'post', path: '/v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/retry', operationId: 'retryDelivery', tag: 'Webhooks', auth: 'company',
    summary: 'Re-send a delivery',
    description: 'Sends it now, whatever its state (a replay of a succeeded one included), and returns it with the new attempt logged. When the attempt fails, a delivery that had succeeded stays succeeded; any other goes back on its retry schedule (or stays failed once the schedule is used up). One in flight right now is 409, and so is a delivery that has had 20 attempts (the 10 of the retry schedule and re-sends together): it is not sent again. A re-send takes one of the send slots background sends take (per webhook and per company): while none is free, 429 with `Retry-After`.',
    response: {
      schema: 'Delivery', description: 'The delivery with the new attempt.',
      example: { ...ex.deliveryExample, attempts: 2, attempts_log: [...ex.deliveryExample.attempts_log, { ...ex.deliveryExample.attempts_log[0], id: 'wha_01jq3vah9k1m3n5p7q9r1s3t5v' }] },
    },
    errors: ['conflict'],
  },
  {
    method: 'post', path: '/v1/webhooks', operationId: 'registerWebhookByType', tag: 'Webhooks', auth: 'company',
    summary: 'Register a webhook (by event type)',
    description: 'Variant A: a url for one event type; the same url may be registered for several types (it stays one webhook). Deliveries carry the variant A payload.',
    body: { schema: 'WebhookTypeRegistration', example: { type: 'negative_balance', url: 'https://hooks.acme.example/negative' } },
    response: {
      schema: 'WebhookWithSecret', description: 'The webhook with its signing secret.',
      example: { ...ex.webhookExample, url: 'https://hooks.acme.example/negative', username: null, password: null, style: 'type', topics: ['negative_balance'], secret: ex.webhookSecretExample },
    },
  },
  {
    method: 'get', path: '/v1/webhooks', operationId: 'listWebhooks', tag: 'Webhooks', auth: 'company',
    summary: 'List webhooks (short path)', description: 'The same list as `GET /v1/companies/{company_id}/webhooks`.',
    query: listQuery,
    response: { schema: 'Webhook', list: 'paged', description: 'The webhooks.', example: [ex.webhookExample] },
  },

  // Test clock
  {
    method: 'get', path: '/v1/test_clock', operationId: 'getTestClock', tag: 'Test clock', auth: 'admin',
    summary: 'Read the test clock', description: 'Only with `BILLING_TEST_CLOCK=1` and `ADMIN_TOKEN` set (otherwise 404). The clock starts at the real time.',
    response: { schema: 'TestClock', description: 'The service time.', example: { now: '2027-03-10T12:00:00.000Z' } },
  },
  {
    method: 'post', path: '/v1/test_clock/advance', operationId: 'advanceTestClock', tag: 'Test clock', auth: 'admin',
    summary: 'Advance the test clock',
    description: 'Moves the clock and returns after all time-driven work due by the new time has run: pending expiry, refills, renewals, scheduled changes, webhook attempts. `seconds: 0` runs what is already due.',
    body: { schema: 'TestClockAdvance', example: { seconds: 86400 } },
    response: { schema: 'TestClock', description: 'The new service time.', example: { now: '2027-03-11T12:00:00.000Z' } },
  },
];

/**
 * Other spellings the service answers with the very same handler (a route file that re-exports
 * the canonical one, or one handler under two methods). Each is documented as an operation of
 * its own, with its own operationId, marked `x-alias-of` its canonical operation, so a client
 * generated from the document knows every path and can tell which ones mean the same call.
 */
const ALIASES: { method: Method; path: string; operationId: string; of: string; why: string }[] = [
  { method: 'post', path: '/v1/companies/{company_id}/plan', operationId: 'createPlanAlias', of: 'createPlan', why: 'the interface\'s own spelling of plan creation' },
  { method: 'put', path: '/v1/accounts/{account_id}/autorefill', operationId: 'scheduleRefillChangeAlias', of: 'scheduleRefillChange', why: 'the `autorefill` spelling' },
  { method: 'put', path: '/v1/accounts/{account_id}/balance/{denomination}/autorefill', operationId: 'setAutoRefillAlias', of: 'setAutoRefill', why: 'the `autorefill` spelling' },
  { method: 'delete', path: '/v1/accounts/{account_id}/balance/{denomination}/autorefill', operationId: 'removeAutoRefillAlias', of: 'removeAutoRefill', why: 'the `autorefill` spelling' },
  { method: 'put', path: '/v1/accounts/{account_id}/modifymidmonth', operationId: 'modifyMidMonthPut', of: 'modifyMidMonth', why: 'the PUT form' },
];

function aliasOperation(alias: (typeof ALIASES)[number]): Operation {
  const canonical = CANONICAL.find((o) => o.operationId === alias.of);
  if (!canonical) throw new Error(`alias ${alias.operationId} names no operation ${alias.of}`);
  return {
    ...canonical,
    method: alias.method,
    path: alias.path,
    operationId: alias.operationId,
    summary: `${canonical.summary} (alias)`,
    description: `An alias of \`${canonical.method.toUpperCase()} ${canonical.path}\` (${canonical.operationId}), ${alias.why}: the same handler, body, answers and errors. ${(canonical.description ?? '').replace(/\s*Also at .*$/, '')}`.trim(),
    aliasOf: canonical.operationId,
  };
}

export const OPERATIONS: Operation[] = [...CANONICAL, ...ALIASES.map(aliasOperation)];
