import Stripe from 'stripe';
import { decrypt } from '../crypto';
import { ApiError } from '../errors';
import { setting } from '../env';

const clients = new Map<string, Stripe>();

/**
 * Whether payments go to a stand-in (the bundled local server, or anything else STRIPE_API_URL
 * names) rather than Stripe's own API. A stand-in must never see live keys: it would take real
 * card data and report payments that no one made.
 */
export function processorIsStandIn(): boolean {
  return Boolean(setting('STRIPE_API_URL'));
}

export function isLiveKey(key: string): boolean {
  return /^(sk|rk|pk)_live_/.test(key);
}

/** The official SDK, pointed at STRIPE_API_URL when set (a local Stripe-compatible server). */
export function stripeClient(secretKey: string): Stripe {
  // Registration refuses live keys off Stripe; this holds for keys stored before STRIPE_API_URL was set.
  if (isLiveKey(secretKey) && processorIsStandIn()) {
    throw new ApiError('processor_error', 'The company\'s processor key is a live key, and this service is configured with a stand-in payment processor (STRIPE_API_URL): nothing was sent to it.');
  }
  let client = clients.get(secretKey);
  if (!client) {
    const base = setting('STRIPE_API_URL');
    const config: Stripe.StripeConfig = { maxNetworkRetries: 0, timeout: setting('STRIPE_TIMEOUT_MS') };
    if (base) {
      const u = new URL(base);
      config.host = u.hostname;
      config.port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
      config.protocol = u.protocol === 'https:' ? 'https' : 'http';
    }
    client = new Stripe(secretKey, config);
    clients.set(secretKey, client);
  }
  return client;
}

export type ProcessorCompany = { processorKeyEnc: string | null };

export function processorFor(company: ProcessorCompany): Stripe | null {
  return company.processorKeyEnc ? stripeClient(decrypt(company.processorKeyEnc)) : null;
}

/** Maps SDK failures to the error contract: declines are 402 card_declined, the rest 502. */
export function processorFailure(err: unknown): ApiError {
  if (err instanceof Stripe.errors.StripeCardError) {
    return new ApiError('card_declined', plainDecline(err.decline_code || err.code), null, {
      decline_code: err.decline_code || err.code || null,
    });
  }
  if (err instanceof Stripe.errors.StripeInvalidRequestError) {
    return new ApiError('processor_error', `The payment processor refused the request: ${err.message}`);
  }
  return new ApiError('processor_error', 'The payment processor failed or did not answer in time. Nothing was charged twice; retry later.');
}

export function plainDecline(code: string | undefined | null): string {
  switch (code) {
    case 'insufficient_funds':
      return 'The card was declined: it has insufficient funds.';
    case 'expired_card':
      return 'The card was declined: it has expired.';
    case 'incorrect_cvc':
      return 'The card was declined: the security code (CVC) is incorrect.';
    case 'incorrect_number':
      return 'The card number is incorrect.';
    case 'lost_card':
    case 'stolen_card':
      return 'The card was declined. Please use another card.';
    default:
      return 'The card was declined by the bank. Please use another card or contact the bank.';
  }
}

export async function createCustomer(args: { stripe: Stripe; accountId: string; name: string; email: string }): Promise<string> {
  try {
    const customer = await args.stripe.customers.create(
      { name: args.name, email: args.email, metadata: { account_id: args.accountId } },
      { idempotencyKey: `customer-${args.accountId}` },
    );
    return customer.id;
  } catch (err) {
    throw processorFailure(err);
  }
}
