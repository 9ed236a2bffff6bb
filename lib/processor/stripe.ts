import Stripe from 'stripe';
import { sha256 } from '../crypto';
import { ApiError, invalid } from '../errors';
import { setting, testRunnerOnly } from '../env';
import { TOKEN_REFUSED, plainDecline, type CardSummary, type PaymentLook, type PaymentOutcome, type PaymentRequest, type Processor } from './port';

// The Stripe adapter: the only module that calls the Stripe SDK. It maps Stripe's answers and
// errors to the port's outcomes (port.ts), so the domain never reads an SDK error.

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
function stripeClient(secretKey: string): Stripe {
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

/**
 * Tests only: forgets the SDK clients, which keep the STRIPE_API_URL and STRIPE_TIMEOUT_MS they
 * were made with (a test file's own local Stripe server, gone with the file).
 */
export function forgetStripeClientsForTests(): void {
  testRunnerOnly('forgetStripeClientsForTests');
  clients.clear();
}

/** Maps SDK failures of customer and card calls to the error contract: declines are 402 card_declined, the rest 502. */
function processorFailure(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
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

/** A PaymentIntent as an outcome: paid, declined, or not finished (looked at again later). */
function fromIntent(intent: Stripe.PaymentIntent): PaymentOutcome {
  if (intent.status === 'succeeded') return { kind: 'paid', intentId: intent.id };
  if (intent.status === 'requires_payment_method' || intent.status === 'canceled') {
    const e = intent.last_payment_error;
    const code = e?.decline_code || e?.code || intent.status;
    return { kind: 'declined', code, message: plainDecline(code), intentId: intent.id };
  }
  // processing (the bank answers later) or otherwise unfinished.
  return { kind: 'unknown', intentId: intent.id, why: 'processing' };
}

/**
 * A failed payment call, read. Only a card decline and a request refused as invalid (a 400
 * other than a reused key) are definite, and a refused API key on the key's first send; every
 * other failure may hide a payment made, or still being made, under the key.
 */
function fromPaymentError(err: unknown, firstSend: boolean): PaymentOutcome {
  if (err instanceof Stripe.errors.StripeCardError) {
    const code = err.decline_code || err.code || 'card_declined';
    const intentId = (err.payment_intent as Stripe.PaymentIntent | undefined)?.id ?? null;
    return { kind: 'declined', code, message: plainDecline(code), intentId };
  }
  if (err instanceof Stripe.errors.StripeAuthenticationError || err instanceof Stripe.errors.StripePermissionError) {
    // Checked before the idempotency cache: on a later send nothing is learnt of the first.
    if (firstSend) return { kind: 'refused', message: `The payment processor refused the company's API key: ${err.message}` };
    return { kind: 'unknown', intentId: null, why: 'key_refused' };
  }
  // The key was used with other parameters: whatever was done under it stands.
  if (err instanceof Stripe.errors.StripeIdempotencyError) return { kind: 'unknown', intentId: null, why: 'key_reused' };
  if (err instanceof Stripe.errors.StripeRateLimitError) return { kind: 'unknown', intentId: null, why: 'rate_limited' };
  if (err instanceof Stripe.errors.StripeInvalidRequestError) return { kind: 'refused', message: `The payment processor refused the request: ${err.message}` };
  const e = err as { code?: string; statusCode?: number };
  // 409 idempotency_key_in_use: another request with this key is still running.
  if (e?.code === 'idempotency_key_in_use' || e?.statusCode === 409) return { kind: 'unknown', intentId: null, why: 'in_use' };
  if ((e?.statusCode ?? 0) >= 500) return { kind: 'unknown', intentId: null, why: 'server_error' };
  return { kind: 'unknown', intentId: null, why: 'no_answer' };
}

function toCard(pm: Stripe.PaymentMethod): CardSummary {
  const card = pm.card;
  return { id: pm.id, brand: card?.brand ?? 'unknown', last4: card?.last4 ?? '', exp_month: card?.exp_month ?? 0, exp_year: card?.exp_year ?? 0 };
}

/**
 * The processor's refusal of an account's customer record (deleted there, or never there): the
 * company's to correct, not the card's. Says nothing of the processor's ids, as the card holder may read it.
 */
function customerRefused(): ApiError {
  return new ApiError(
    'invalid_request',
    "The payment processor refused this account's customer record (processor_id), so the card was not saved. The company must correct the account's processor customer.",
    'processor_id',
  );
}

/** How many of a customer's payments one look reads at most: the list is bounded by time, this only stops a runaway. */
const MAX_LISTED = 10_000;

/** The port on Stripe's API, for one secret key. */
export function stripeProcessor(secretKey: string): Processor {
  const stripe = stripeClient(secretKey);
  return {
    async createPayment(req: PaymentRequest): Promise<PaymentOutcome> {
      try {
        const intent = await stripe.paymentIntents.create(
          {
            amount: req.amount,
            currency: 'usd',
            customer: req.customer,
            payment_method: req.paymentMethod,
            // A saved card, charged off session, where no one can be redirected: without this the
            // intent allows redirect-based methods, and Stripe refuses to confirm it without a return_url.
            automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
            confirm: true,
            off_session: true,
            description: req.description,
            metadata: req.metadata,
          },
          { idempotencyKey: req.idempotencyKey },
        );
        return fromIntent(intent);
      } catch (err) {
        return fromPaymentError(err, req.firstSend);
      }
    },

    async retrievePayment(intentId: string): Promise<PaymentLook> {
      try {
        return fromIntent(await stripe.paymentIntents.retrieve(intentId));
      } catch (err) {
        return err instanceof Stripe.errors.StripeInvalidRequestError && err.statusCode === 404 ? { kind: 'not_found' } : { kind: 'unanswered' };
      }
    },

    async findPayment({ customer, chargeId, since }): Promise<PaymentLook> {
      try {
        let read = 0;
        for await (const pi of stripe.paymentIntents.list({ customer, created: { gte: Math.floor(since.getTime() / 1000) }, limit: 100 })) {
          if (pi.metadata?.charge_id === chargeId) return fromIntent(pi);
          if (++read >= MAX_LISTED) return { kind: 'unanswered' };
        }
        return { kind: 'not_found' };
      } catch {
        return { kind: 'unanswered' };
      }
    },

    async createCustomer({ accountId, name, email }): Promise<string> {
      try {
        const customer = await stripe.customers.create({ name, email, metadata: { account_id: accountId } }, { idempotencyKey: `customer-${accountId}` });
        return customer.id;
      } catch (err) {
        throw processorFailure(err);
      }
    },

    async defaultCard(customerId: string): Promise<CardSummary | null> {
      try {
        const customer = await stripe.customers.retrieve(customerId, { expand: ['invoice_settings.default_payment_method'] });
        if ('deleted' in customer && customer.deleted) throw invalid('That processor customer was deleted.', 'processor_id');
        const pm = (customer as Stripe.Customer).invoice_settings?.default_payment_method;
        if (!pm || typeof pm === 'string' || !pm.card) return null;
        return toCard(pm);
      } catch (err) {
        if (err instanceof Stripe.errors.StripeInvalidRequestError) throw invalid(`No such processor customer: ${customerId}.`, 'processor_id');
        throw processorFailure(err);
      }
    },

    /**
     * Turns a card token from Stripe's client-side card element (or a pm_ id) into the customer's
     * default payment method. Only calls a restricted key allows: payment_methods create/attach
     * and customers update, each with an idempotency key derived from our ids.
     */
    async attachCard({ accountId, customer, token }): Promise<CardSummary> {
      const ref = sha256(`${accountId}:${token}`).slice(0, 24);
      // Which call a refusal came from tells whose it is: the token's, or the account's customer's.
      let step: 'token' | 'attach' | 'default' = 'token';
      try {
        const pm = token.startsWith('pm_')
          ? await stripe.paymentMethods.retrieve(token)
          : await stripe.paymentMethods.create({ type: 'card', card: { token } }, { idempotencyKey: `pm-create-${ref}` });
        step = 'attach';
        if (pm.customer !== customer) await stripe.paymentMethods.attach(pm.id, { customer }, { idempotencyKey: `pm-attach-${ref}` });
        step = 'default';
        await stripe.customers.update(customer, { invoice_settings: { default_payment_method: pm.id } }, { idempotencyKey: `pm-default-${ref}` });
        return toCard(pm);
      } catch (err) {
        if (err instanceof Stripe.errors.StripeInvalidRequestError) {
          // At the default step, a refusal naming the payment method is the card's; any other is the customer's.
          const aboutCard = err.param?.startsWith('invoice_settings') ?? false;
          if ((step === 'default' && !aboutCard) || (step === 'attach' && err.param === 'customer')) throw customerRefused();
          throw new ApiError('invalid_request', `${TOKEN_REFUSED}: ${err.message}`, 'token');
        }
        throw processorFailure(err);
      }
    },
  };
}
