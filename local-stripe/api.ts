/**
 * The /v1 routes of the local Stripe, each resource's endpoints in a file of its own. HTTP concerns (auth, idempotency, failure injection) live in server.ts.
 *
 * Every handler validates everything before it mutates anything, so a 400
 * leaves no half-created objects behind (as with Stripe).
 */
import { createCustomer, deleteCustomer, listCustomers, updateCustomer } from './customers';
import { StripeHttpError, invalidRequest } from './errors';
import { Account, ApiRequest, PaymentIntentStatus, copy, expand, getCustomer } from './objects';
import { allowOnly } from './params';
import { confirmPaymentIntent, createPaymentIntent, getPaymentIntent, listPaymentIntents, retrieveCharge } from './payment-intents';
import { attachPaymentMethod, createPaymentMethod, detachPaymentMethod, listPaymentMethods, retrievePaymentMethod } from './payment-methods';
import { createToken, retrieveToken } from './tokens';

interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  pattern: RegExp;
  /** Publishable keys may call this route (as with Stripe: only tokens and payment methods). */
  publishable?: boolean;
  /** A plain retrieve: the only accepted param is `expand`. */
  retrieve?: boolean;
  handler: (req: ApiRequest, ...ids: string[]) => object;
}

const ID = '([A-Za-z0-9_]+)';

const ROUTES: Route[] = [
  { method: 'POST', pattern: /^\/v1\/customers$/, handler: createCustomer },
  { method: 'GET', pattern: /^\/v1\/customers$/, handler: listCustomers },
  { method: 'GET', pattern: new RegExp(`^/v1/customers/${ID}$`), retrieve: true, handler: (r, id) => getCustomer(r.account, id) },
  { method: 'POST', pattern: new RegExp(`^/v1/customers/${ID}$`), handler: updateCustomer },
  { method: 'DELETE', pattern: new RegExp(`^/v1/customers/${ID}$`), handler: deleteCustomer },
  {
    method: 'GET',
    pattern: new RegExp(`^/v1/customers/${ID}/payment_methods$`),
    handler: (r, id) => listPaymentMethods(r, id),
  },
  { method: 'POST', pattern: /^\/v1\/tokens$/, publishable: true, handler: createToken },
  { method: 'GET', pattern: new RegExp(`^/v1/tokens/${ID}$`), retrieve: true, handler: retrieveToken },
  { method: 'POST', pattern: /^\/v1\/payment_methods$/, publishable: true, handler: createPaymentMethod },
  { method: 'GET', pattern: /^\/v1\/payment_methods$/, handler: (r) => listPaymentMethods(r) },
  { method: 'GET', pattern: new RegExp(`^/v1/payment_methods/${ID}$`), retrieve: true, handler: retrievePaymentMethod },
  { method: 'POST', pattern: new RegExp(`^/v1/payment_methods/${ID}/attach$`), handler: attachPaymentMethod },
  { method: 'POST', pattern: new RegExp(`^/v1/payment_methods/${ID}/detach$`), handler: detachPaymentMethod },
  { method: 'POST', pattern: /^\/v1\/payment_intents$/, handler: createPaymentIntent },
  { method: 'GET', pattern: /^\/v1\/payment_intents$/, handler: listPaymentIntents },
  { method: 'GET', pattern: new RegExp(`^/v1/payment_intents/${ID}$`), retrieve: true, handler: (r, id) => getPaymentIntent(r.account, id) },
  { method: 'POST', pattern: new RegExp(`^/v1/payment_intents/${ID}/confirm$`), handler: confirmPaymentIntent },
  { method: 'GET', pattern: new RegExp(`^/v1/charges/${ID}$`), retrieve: true, handler: retrieveCharge },
];

export function unrecognizedUrl(method: string, path: string): StripeHttpError {
  return invalidRequest(
    `Unrecognized request URL (${method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
    { code: 'resource_missing', status: 404 },
  );
}

/** Runs one /v1 request; throws StripeHttpError for Stripe error answers. Returns the JSON body. */
export function handleApi(req: ApiRequest): object {
  for (const route of ROUTES) {
    if (route.method !== req.method) continue;
    const m = route.pattern.exec(req.path);
    if (!m) continue;
    if (req.publishable && !route.publishable) {
      throw invalidRequest(
        'This API call cannot be made with a publishable API key. Please use a secret API key. You can find a list of your API keys at https://dashboard.stripe.com/account/apikeys.',
        { status: 401 },
      );
    }
    if (route.retrieve) allowOnly(req.params, ['expand']);
    const result = route.handler(req, ...m.slice(1));
    // Copy so later mutations of the store never leak into a sent/stored answer.
    return expand(req.account, copy(result), req.params);
  }
  throw unrecognizedUrl(req.method, req.path);
}

/** Counts for GET /__control/state. */
export function accountCounts(account: Account) {
  const byStatus: Partial<Record<PaymentIntentStatus, number>> = {};
  for (const pi of account.paymentIntents.values()) byStatus[pi.status] = (byStatus[pi.status] ?? 0) + 1;
  return {
    customers: account.customers.size,
    payment_methods: account.paymentMethods.size,
    payment_intents: account.paymentIntents.size,
    payment_intents_by_status: byStatus,
    charges: account.charges.size,
    payment_intent_list_pages: account.intentListPages,
    payment_intents_listed: account.intentsListed,
  };
}
